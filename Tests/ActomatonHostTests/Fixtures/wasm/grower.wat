;; A plugin module whose state is its memory (wasm/build.sh assembles it with wat2wasm), for the
;; tests of the memory the host's instances may have together (--wasm-memory-total).
;; The state n is how many 64-KiB pages the memory has past its first two.
;; Actions: grow_one (one page more, a trap when the grow is refused), grow_or_refuse (one page
;; more, or the action refused with "no memory"), grow_or_skip (one page more, or none: it
;; succeeds either way, as a module that makes do without memory). A snapshot is n; a restore grows the memory
;; back to it, and is refused when that grow is. The description is "n=" and n in decimal.
(module
 (import "actomaton" "fail" (func $fail (param i32 i32)))
 (memory (export "memory") 2)
 (func $n (result i32) (i32.sub (memory.size) (i32.const 2)))
 (func (export "actomaton_abi_version") (result i32) (i32.const 2))
 (func (export "actomaton_manifest") (result i32) (i32.const 65664))
 (func (export "actomaton_alloc") (param $size i32) (result i32)
   (if (result i32) (i32.le_u (local.get $size) (i32.const 60000)) (then (i32.const 1024)) (else (i32.const 0))))
 (func (export "actomaton_snapshot") (result i64)
   (i32.store (i32.const 0) (call $n))
   (i64.const 0x0000000400000000))
 (func (export "actomaton_restore") (param $at i32) (param $size i32) (result i32)
   (local $target i32)
   (if (i32.ne (local.get $size) (i32.const 4)) (then (return (i32.const 1))))
   (local.set $target (i32.load (local.get $at)))
   (if (i32.lt_s (local.get $target) (call $n)) (then (return (i32.const 1))))
   (if (i32.gt_s (local.get $target) (call $n))
     (then (if (i32.eq (memory.grow (i32.sub (local.get $target) (call $n))) (i32.const -1))
       (then (return (i32.const 1))))))
   (i32.const 0))
 (func (export "actomaton_describe") (result i64)
   (local $v i32) (local $p i32)
   (local.set $v (call $n))
   (local.set $p (i32.const 64))
   (loop $digits
     (local.set $p (i32.sub (local.get $p) (i32.const 1)))
     (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
     (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
     (br_if $digits (local.get $v)))
   (local.set $p (i32.sub (local.get $p) (i32.const 2)))
   (i32.store16 (local.get $p) (i32.const 0x3d6e))
   (i64.or (i64.extend_i32_u (local.get $p)) (i64.shl (i64.extend_i32_u (i32.sub (i32.const 64) (local.get $p))) (i64.const 32))))
 (func (export "actomaton_action_grow_one") (result i32)
   (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then (unreachable)))
   (i32.const 0))
 (func (export "actomaton_action_grow_or_refuse") (result i32)
   (if (result i32) (i32.eq (memory.grow (i32.const 1)) (i32.const -1))
     (then (call $fail (i32.const 65720) (i32.const 9)) (i32.const 1))
     (else (i32.const 0))))
 (func (export "actomaton_action_grow_or_skip") (result i32)
   (drop (memory.grow (i32.const 1)))
   (i32.const 0))
 ;; Action names at 65536, 65544 and 65558, the plugin's name and version at 65600 and 65606.
 (data (i32.const 65536) "grow_one")
 (data (i32.const 65544) "grow_or_refuse")
 (data (i32.const 65558) "grow_or_skip")
 (data (i32.const 65600) "grower")
 (data (i32.const 65606) "1.0.0")
 ;; The action table at 65616: name, name length, parameters, parameter count.
 (data (i32.const 65616) "\00\00\01\00\08\00\00\00\00\00\00\00\00\00\00\00\08\00\01\00\0e\00\00\00\00\00\00\00\00\00\00\00\16\00\01\00\0c\00\00\00\00\00\00\00\00\00\00\00")
 (data (i32.const 65720) "no memory")
 ;; The manifest at 65664: version 2, name, version, no summary, the actions, no diagram.
 (data (i32.const 65664) "\02\00\00\00\40\00\01\00\06\00\00\00\46\00\01\00\05\00\00\00\00\00\00\00\00\00\00\00\50\00\01\00\03\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00")
)
