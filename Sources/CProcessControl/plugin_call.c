#include "plugin_call.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALTERNATE_STACK_SIZE (64 * 1024)

static _Thread_local const char *current_plugin;
static _Thread_local const char *current_call;
static _Thread_local int depth;
static _Thread_local int has_alternate_stack;

static void give_alternate_stack(void) {
    has_alternate_stack = 1;
    stack_t existing;
    if (sigaltstack(NULL, &existing) == 0 && !(existing.ss_flags & SS_DISABLE)) return;
    // Kept for the thread's life: a pool thread runs plugin code again and again.
    void *memory = malloc(ALTERNATE_STACK_SIZE);
    if (memory == NULL) return;
    stack_t stack = {.ss_sp = memory, .ss_size = ALTERNATE_STACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) free(memory);
}

void actomaton_plugin_call_enter(const char *plugin, const char *call) {
    if (!has_alternate_stack) give_alternate_stack();
    if (depth++ == 0) {
        current_plugin = plugin;
        current_call = call;
    }
}

void actomaton_plugin_call_leave(void) {
    if (depth > 0 && --depth == 0) {
        current_plugin = NULL;
        current_call = NULL;
    }
}

static unsigned long append(char *buffer, unsigned long capacity, unsigned long length, const char *text, unsigned long limit) {
    for (unsigned long index = 0; text[index] != 0 && index < limit && length + 1 < capacity; index++) {
        char character = text[index];
        // Printable ASCII only: the line must not drive a terminal.
        buffer[length++] = (character >= 0x20 && character < 0x7f) ? character : '?';
    }
    return length;
}

unsigned long actomaton_plugin_call_describe(char *buffer, unsigned long capacity) {
    if (capacity == 0) return 0;
    buffer[0] = 0;
    if (depth == 0 || current_plugin == NULL) return 0;
    unsigned long length = 0;
    length = append(buffer, capacity, length, "plugin ", 16);
    length = append(buffer, capacity, length, current_plugin, 128);
    length = append(buffer, capacity, length, "'s '", 16);
    length = append(buffer, capacity, length, current_call ? current_call : "?", 128);
    length = append(buffer, capacity, length, "'", 16);
    buffer[length] = 0;
    return length;
}

static volatile sig_atomic_t error_descriptor = 2;

int actomaton_error_descriptor(void) { return error_descriptor; }

void actomaton_set_error_descriptor(int descriptor) { error_descriptor = descriptor; }

static void write_text(const char *text) {
    unsigned long length = strlen(text);
    while (length > 0) {
        long written = write(actomaton_error_descriptor(), text, length);
        if (written <= 0) return;
        text += written;
        length -= (unsigned long)written;
    }
}

static void plugin_exited(int status, void *unused) {
    (void)unused;
    char call[256];
    if (actomaton_plugin_call_describe(call, sizeof call) == 0) return;
    char digits[16];
    int length = 0;
    unsigned int value = (unsigned int)status & 0xff;
    do {
        digits[length++] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    char number[16];
    for (int index = 0; index < length; index++) number[index] = digits[length - 1 - index];
    number[length] = 0;
    write_text("error: actomaton-host ended: ");
    write_text(call);
    write_text(" called exit(");
    write_text(number);
    write_text("), and every plugin's machine with it\n");
    _exit(status == 0 ? 1 : status);
}

void actomaton_report_plugin_exits(void) {
    on_exit(plugin_exited, NULL);
}
