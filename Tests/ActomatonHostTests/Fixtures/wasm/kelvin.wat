;; timedcrash.wat named "Kcr", a name with a capital K, for the service's tests of a plugin name spelled
;; with a Kelvin sign (U+212A), which Swift strings take for a K (wasm/build.sh assembles it with wat2wasm).
;; Actions: bump (+1); bump_later (+1, and bump again in an hour, a delayed action); crash (a trap,
;; after which the host rebuilds the state by replaying the actions since the last snapshot).
;; The description is "n=" and the count in decimal.
(module

 (import "actomaton" "next_action" (func $next (param i32) (result i32)))
 (import "actomaton" "delayed_action" (func $delayed (param i32 i64 i32) (result i32)))
 (import "actomaton" "repeating_action" (func $repeating (param i32 i64 i32) (result i32)))
 (import "actomaton" "cancel" (func $cancel (param i32 i32) (result i32)))
 (import "actomaton" "fail" (func $fail (param i32 i32)))
 (import "actomaton" "log" (func $log (param i32 i32)))

(memory (export "memory") 2)
(func (export "actomaton_abi_version") (result i32) (i32.const 2))
(func (export "actomaton_manifest") (result i32) (i32.const 65656))
(func (export "actomaton_alloc") (param $n i32) (result i32) (if (result i32) (i32.le_u (local.get $n) (i32.const 60000)) (then (i32.const 1024)) (else (i32.const 0))))
(func (export "actomaton_snapshot") (result i64) (i64.const 0x0000000400000000))
(func (export "actomaton_restore") (param $at i32) (param $n i32) (result i32)
    (if (result i32) (i32.eq (local.get $n) (i32.const 4))
      (then (i32.store (i32.const 0) (i32.load (local.get $at))) (i32.const 0))
      (else (i32.const 1))))
(func (export "actomaton_describe") (result i64)
    (local $v i32) (local $p i32)
    (local.set $v (i32.load (i32.const 0)))
    (local.set $p (i32.const 64))
    (loop $l
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $l (local.get $v)))
    (local.set $p (i32.sub (local.get $p) (i32.const 2)))
    (i32.store16 (local.get $p) (i32.const 0x3d6e))
    (i64.or (i64.extend_i32_u (local.get $p)) (i64.shl (i64.extend_i32_u (i32.sub (i32.const 64) (local.get $p))) (i64.const 32))))
(func (export "actomaton_action_bump")  (result i32) (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1))) (i32.const 0))
;; The call at 512 is all zeros: action 0 (bump), no arguments.
(func (export "actomaton_action_bump_later")  (result i32)
    (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1)))
    (call $delayed (i32.const 512) (i64.const 3600000000000) (i32.const 0)))
(func (export "actomaton_action_crash")  (result i32) unreachable)

(data (i32.const 65536) "bump")
(data (i32.const 65540) "bump_later")
(data (i32.const 65550) "crash")
;; The action table at 65584: name, name length, parameters, parameter count.
(data (i32.const 65584) "\00\00\01\00\04\00\00\00\00\00\00\00\00\00\00\00\04\00\01\00\0a\00\00\00\00\00\00\00\00\00\00\00\0e\00\01\00\05\00\00\00\00\00\00\00\00\00\00\00")
(data (i32.const 65648) "Kcr")
(data (i32.const 65651) "1.0.0")
;; The manifest at 65656: version 2, name, version, no summary, the 3 actions, no diagram.
(data (i32.const 65656) "\02\00\00\00\70\00\01\00\03\00\00\00\73\00\01\00\05\00\00\00\00\00\00\00\00\00\00\00\30\00\01\00\03\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00")
)
