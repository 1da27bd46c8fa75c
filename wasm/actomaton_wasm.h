/*
 * The C ABI of the bare Actomaton WebAssembly modules (`make wasm-build` -> .build/wasm/).
 * (The contract of .wasm *plugins* for actomaton-host is another one: kit/actomaton_wasm_plugin.h.)
 *
 * Each module is a wasm32 "reactor": no start function, no imports at all (not even WASI), and
 * these exports plus its `memory`. Any wasm runtime can drive it: instantiate, then call.
 * A module instance holds one machine; instantiate the module again for another.
 *
 * Conventions, for every function below:
 *  - Integers are i32. A negative result is a status code (AM_*): the call did nothing, and
 *    the machine is as it was. Modules never trap on bad input.
 *  - Pointers are offsets into the module's exported `memory`. Memory behind a pointer the
 *    module returns belongs to the module: read or write it before the next call into the
 *    same module, which may move it.
 */
#ifndef ACTOMATON_WASM_H
#define ACTOMATON_WASM_H

#include <stdint.h>

#define AM_OK                 0
#define AM_ERROR_UNKNOWN_ACTION (-2)  /* the action code is not one the module knows */
#define AM_ERROR_BAD_ARGUMENT   (-3)  /* an argument is out of range */
#define AM_ERROR_OUT_OF_MEMORY  (-4)  /* the module could not grow its memory */

/* Every module: the version of this ABI it speaks (1). */
int32_t am_abi_version(void);

/* ---- counter.wasm: a counter on NoOpEffectManager ------------------------------------ */

/* Sets the count to 0. Returns AM_OK. */
int32_t counter_reset(void);
/* action 0: +1, 1: -1, 2: +argument, 3: reset to 0 (wrapping Int32 arithmetic).
   Returns AM_OK, or AM_ERROR_UNKNOWN_ACTION. */
int32_t counter_send(int32_t action, int32_t argument);
/* The current count. */
int32_t counter_value(void);

/* ---- csv.wasm: the streaming RFC 4180 tokenizer of Plugins/CSVExample ------------------ */

/* Starts a new input whose fields are separated by the byte `delimiter` (44 is ','; 9 is tab).
   Returns AM_OK, or AM_ERROR_BAD_ARGUMENT for a delimiter that is not a byte or is '"', CR, LF. */
int32_t csv_reset(int32_t delimiter);
/* A buffer of at least `capacity` bytes for the input of the next csv_feed; 0 when capacity is
   negative or memory is exhausted. */
uint8_t *csv_input_buffer(int32_t capacity);
/* Tokenizes the first `length` bytes written to the input buffer, continuing where the last
   feed stopped (a field or quote may span feeds). Returns the number of tokens written to the
   output buffer, or AM_ERROR_BAD_ARGUMENT if `length` exceeds the buffer's capacity.
   Malformed CSV is not an error of the call: it comes back as error tokens. */
int32_t csv_feed(int32_t length);
/* Ends the input: emits the last field and record, if any, and starts over.
   Returns the number of tokens written to the output buffer. */
int32_t csv_finish(void);
/* The tokens of the last csv_feed or csv_finish, `csv_output_length()` bytes at
   `csv_output_pointer()`. Each token is a kind byte, a little-endian uint32 payload length,
   then the payload:
     1  field          the field's bytes (quotes removed, "" made ")
     2  end of record  (no payload)
     3  syntax error   9 bytes: kind (1 quote in unquoted field, 2 byte after closing quote,
                       3 unterminated quoted field), line (uint32), column (uint32), from 1 */
uint8_t *csv_output_pointer(void);
int32_t csv_output_length(void);

/* ---- tictactoe.wasm: the rules of Plugins/TicTacToeExample ----------------------------- */

/* An empty board, X to move. Returns AM_OK. */
int32_t ttt_reset(void);
/* action 0: the player to move marks (row, column), each 0...2; action 1: restart.
   Returns 1 moved, 2 X won, 3 O won, 4 draw, 5 restarted; a refused move leaves the board as it
   was and returns -11 outside the board, -12 square taken, -13 game over; AM_ERROR_UNKNOWN_ACTION. */
int32_t ttt_send(int32_t action, int32_t row, int32_t column);
/* The mark at (row, column): 0 none, 1 X, 2 O; AM_ERROR_BAD_ARGUMENT outside the board. */
int32_t ttt_square(int32_t row, int32_t column);
/* Whose move it is: 1 X, 2 O. */
int32_t ttt_next_player(void);
/* 0 while the game goes on, 1 X won, 2 O won, 3 draw. */
int32_t ttt_outcome(void);

/* ---- platformer.wasm: the character controller statechart of Plugins/PlatformerExample -- */
/* It runs the chart compiled into tables (Plugins/PlatformerExample/PlatformerTables.swift):
   one table lookup per event, no allocation. The chart's data (rounds left, stun ticks, jumps
   used) is folded into the table's states; it shows in the outputs, not as values. */

/* Back to the initial state: idle, weapon holstered, no history, no outputs. Returns AM_OK. */
int32_t platformer_reset(void);
/* Sends an event: kind 0 move (the stick's `speed`: 0 stops, 1-5 walks, above 5 runs), 1 jump,
   2 apex, 3 leaveGround, 4 land, 5 hit, 6 recover, 7 draw, 8 holster, 9 fire, 10 tick,
   11 reload (`speed` is unused for those). Returns 1 transitioned, 2 ignored (nothing changed,
   no outputs), 3 finished, 4 stopped at the microstep limit; AM_ERROR_UNKNOWN_ACTION. */
int32_t platformer_send(int32_t kind, int32_t speed);
/* The active leaves: bit n set when the state with raw value n of Platformer.State is an active
   atomic or final state (5 idle ... 18 shotDone; always one body and one weapon leaf). */
int32_t platformer_leaves(void);
/* The outputs of the last platformer_send, in order: how many, and the raw value of Platformer.Output
   at `index` (0 jumpSound, 1 landSound, 2 dustOn, 3 dustOff, 4 flash, 5 drawSound, 6 shot,
   7 holsterSound, 8 ready, 9 click, 10 reloadSound, 11 doubleJumpSound); AM_ERROR_BAD_ARGUMENT for an index out of range. */
int32_t platformer_output_count(void);
int32_t platformer_output(int32_t index);

#endif
