;; husk's WASI preview 1 adapter: the `wasi_snapshot_preview1` functions a
;; core module (Go's `GOOS=wasip1` runtime) imports, mapped onto the WASI
;; 0.2 interfaces husk grants every guest (adapter.wit).
;;
;; It never allocates: no stack, no state in linear memory, no call to the
;; module's `cabi_realloc` (Go's runtime is not ready for one while its
;; `_initialize` makes preview 1 calls, and Go owns all memory above its
;; data, so growing memory behind its back corrupts its heap). The two
;; imports that return through memory (`wall-clock.now` and
;; `blocking-write-and-flush`) are given 16 bytes at address 16 as their
;; return area: the bytes there are saved in locals before the call and
;; put back after it. This is safe because the module is single-threaded,
;; the host reads a call's arguments before it writes the result, and no
;; guest code runs between the save and the restore.
;;
;; What a guest gets:
;; - no arguments and no environment;
;; - clocks: realtime (0) and monotonic (1), resolution 1 ns; while the
;;   runtime has paused the monotonic clock (`cabi_realloc`, where calls to
;;   imports are forbidden) both clocks read their last value;
;; - `random_get` from `wasi:random/random`;
;; - fd 0 is an empty stdin, fds 1 and 2 write to stdout and stderr (the
;;   job's log) in writes of at most 4096 bytes; every other fd is EBADF,
;;   and there are no preopened directories;
;; - every path call is ENOTCAPABLE; sockets are EBADF (no socket fds);
;;   `proc_raise` is ENOSYS;
;; - `poll_oneoff` sleeps on the monotonic clock until its earliest clock
;;   subscription (bounded by husk's deadline and cancel like any host
;;   wait) and reports fd subscriptions at once (ready for 0-2, EBADF
;;   otherwise);
;; - `proc_exit` is `wasi:cli/exit.exit` (0: ok, anything else: err).
(module
  (import "env" "memory" (memory 0))
  (import "wasi:clocks/monotonic-clock@0.2.0" "now" (func $monotonic_now (result i64)))
  (import "wasi:clocks/monotonic-clock@0.2.0" "subscribe-duration" (func $subscribe_duration (param i64) (result i32)))
  (import "wasi:io/poll@0.2.0" "[method]pollable.block" (func $block (param i32)))
  (import "wasi:io/poll@0.2.0" "[resource-drop]pollable" (func $drop_pollable (param i32)))
  (import "wasi:clocks/wall-clock@0.2.0" "now" (func $wall_now (param i32)))
  (import "wasi:random/random@0.2.0" "get-random-u64" (func $random_u64 (result i64)))
  (import "wasi:cli/exit@0.2.0" "exit" (func $exit (param i32)))
  (import "wasi:cli/stdout@0.2.0" "get-stdout" (func $get_stdout (result i32)))
  (import "wasi:cli/stderr@0.2.0" "get-stderr" (func $get_stderr (result i32)))
  (import "wasi:io/streams@0.2.0" "[method]output-stream.blocking-write-and-flush"
    (func $blocking_write_and_flush (param i32 i32 i32 i32)))
  (import "wasi:io/streams@0.2.0" "[resource-drop]output-stream" (func $drop_output_stream (param i32)))
  (import "wasi:io/error@0.2.0" "[resource-drop]error" (func $drop_error (param i32)))

  ;; errno values of preview 1
  ;; 0 success, 8 badf, 28 inval, 29 io, 52 nosys, 64 pipe, 70 spipe, 76 notcapable

  ;; The return area lent by the module for one call (see above).
  (global $scratch i32 (i32.const 16))
  ;; Whether the monotonic clock is paused, and the clocks' last readings.
  (global $paused (mut i32) (i32.const 0))
  (global $last_monotonic (mut i64) (i64.const 0))
  (global $last_realtime (mut i64) (i64.const 0))

  (func $monotonic (result i64)
    global.get $paused
    if (result i64)
      global.get $last_monotonic
    else
      call $monotonic_now
      global.set $last_monotonic
      global.get $last_monotonic
    end)

  ;; Nanoseconds since the epoch.
  (func $realtime (result i64)
    (local $saved_low i64) (local $saved_high i64)
    global.get $paused
    if
      global.get $last_realtime
      return
    end
    (local.set $saved_low (i64.load (global.get $scratch)))
    (local.set $saved_high (i64.load offset=8 (global.get $scratch)))
    (call $wall_now (global.get $scratch))
    (global.set $last_realtime
      (i64.add
        (i64.mul (i64.load (global.get $scratch)) (i64.const 1000000000))
        (i64.extend_i32_u (i32.load offset=8 (global.get $scratch)))))
    (i64.store (global.get $scratch) (local.get $saved_low))
    (i64.store offset=8 (global.get $scratch) (local.get $saved_high))
    global.get $last_realtime)

  (func (export "adapter_monotonic_clock_set_paused") (param $paused i32)
    (global.set $paused (local.get $paused)))

  (func (export "args_get") (param i32 i32) (result i32) i32.const 0)
  (func (export "args_sizes_get") (param $count i32) (param $size i32) (result i32)
    (i32.store (local.get $count) (i32.const 0))
    (i32.store (local.get $size) (i32.const 0))
    i32.const 0)
  (func (export "environ_get") (param i32 i32) (result i32) i32.const 0)
  (func (export "environ_sizes_get") (param $count i32) (param $size i32) (result i32)
    (i32.store (local.get $count) (i32.const 0))
    (i32.store (local.get $size) (i32.const 0))
    i32.const 0)

  (func (export "clock_res_get") (param $id i32) (param $out i32) (result i32)
    (if (i32.gt_u (local.get $id) (i32.const 1)) (then (return (i32.const 28))))
    (i64.store (local.get $out) (i64.const 1))
    i32.const 0)
  (func (export "clock_time_get") (param $id i32) (param i64) (param $out i32) (result i32)
    (if (i32.eqz (local.get $id)) (then
      (i64.store (local.get $out) (call $realtime))
      (return (i32.const 0))))
    (if (i32.eq (local.get $id) (i32.const 1)) (then
      (i64.store (local.get $out) (call $monotonic))
      (return (i32.const 0))))
    i32.const 28)

  (func (export "random_get") (param $buf i32) (param $len i32) (result i32)
    (local $value i64)
    (block $done
      (loop $words
        (br_if $done (i32.lt_u (local.get $len) (i32.const 8)))
        (i64.store align=1 (local.get $buf) (call $random_u64))
        (local.set $buf (i32.add (local.get $buf) (i32.const 8)))
        (local.set $len (i32.sub (local.get $len) (i32.const 8)))
        (br $words)))
    (if (local.get $len) (then
      (local.set $value (call $random_u64))
      (loop $bytes
        (i64.store8 (local.get $buf) (local.get $value))
        (local.set $value (i64.shr_u (local.get $value) (i64.const 8)))
        (local.set $buf (i32.add (local.get $buf) (i32.const 1)))
        (local.set $len (i32.sub (local.get $len) (i32.const 1)))
        (br_if $bytes (local.get $len)))))
    i32.const 0)

  ;; One blocking write of at most 4096 bytes: an errno.
  (func $write_chunk (param $stream i32) (param $ptr i32) (param $len i32) (result i32)
    (local $saved_low i64) (local $saved_high i64) (local $errno i32)
    (local.set $saved_low (i64.load (global.get $scratch)))
    (local.set $saved_high (i64.load offset=8 (global.get $scratch)))
    (call $blocking_write_and_flush (local.get $stream) (local.get $ptr) (local.get $len) (global.get $scratch))
    (if (i32.load8_u (global.get $scratch)) (then
      (if (i32.load8_u offset=4 (global.get $scratch))
        (then (local.set $errno (i32.const 64)))
        (else
          (call $drop_error (i32.load offset=8 (global.get $scratch)))
          (local.set $errno (i32.const 29))))))
    (i64.store (global.get $scratch) (local.get $saved_low))
    (i64.store offset=8 (global.get $scratch) (local.get $saved_high))
    local.get $errno)

  (func (export "fd_write") (param $fd i32) (param $iovs i32) (param $count i32) (param $written i32) (result i32)
    (local $stream i32) (local $ptr i32) (local $len i32) (local $chunk i32) (local $total i32) (local $errno i32)
    (if (i32.eq (local.get $fd) (i32.const 1))
      (then (local.set $stream (call $get_stdout)))
      (else
        (if (i32.eq (local.get $fd) (i32.const 2))
          (then (local.set $stream (call $get_stderr)))
          (else (return (i32.const 8))))))
    (block $failed
      (loop $iovecs
        (if (local.get $count) (then
          (local.set $ptr (i32.load (local.get $iovs)))
          (local.set $len (i32.load offset=4 (local.get $iovs)))
          (block $iovec_done
            (loop $chunks
              (br_if $iovec_done (i32.eqz (local.get $len)))
              (local.set $chunk
                (select (local.get $len) (i32.const 4096) (i32.lt_u (local.get $len) (i32.const 4096))))
              (local.set $errno (call $write_chunk (local.get $stream) (local.get $ptr) (local.get $chunk)))
              (br_if $failed (local.get $errno))
              (local.set $ptr (i32.add (local.get $ptr) (local.get $chunk)))
              (local.set $len (i32.sub (local.get $len) (local.get $chunk)))
              (local.set $total (i32.add (local.get $total) (local.get $chunk)))
              (br $chunks)))
          (local.set $iovs (i32.add (local.get $iovs) (i32.const 8)))
          (local.set $count (i32.sub (local.get $count) (i32.const 1)))
          (br $iovecs)))))
    (call $drop_output_stream (local.get $stream))
    ;; A failure after some bytes were written reports the bytes.
    (if (i32.and (i32.ne (local.get $errno) (i32.const 0)) (i32.eqz (local.get $total)))
      (then (return (local.get $errno))))
    (i32.store (local.get $written) (local.get $total))
    i32.const 0)

  (func (export "fd_read") (param $fd i32) (param i32 i32) (param $read i32) (result i32)
    (if (local.get $fd) (then (return (i32.const 8))))
    (i32.store (local.get $read) (i32.const 0))
    i32.const 0)

  (func $is_stdio (param $fd i32) (result i32)
    (i32.lt_u (local.get $fd) (i32.const 3)))

  (func (export "fd_fdstat_get") (param $fd i32) (param $out i32) (result i32)
    (if (i32.eqz (call $is_stdio (local.get $fd))) (then (return (i32.const 8))))
    ;; filetype character_device; no flags; rights fd_read (stdin) or
    ;; fd_write (stdout, stderr), and poll_fd_readwrite.
    (i32.store (local.get $out) (i32.const 2))
    (i32.store offset=4 (local.get $out) (i32.const 0))
    (i64.store offset=8 (local.get $out)
      (i64.or (i64.const 0x8000000)
        (select (i64.const 2) (i64.const 64) (i32.eqz (local.get $fd)))))
    (i64.store offset=16 (local.get $out) (i64.const 0))
    i32.const 0)

  (func (export "fd_fdstat_set_flags") (param $fd i32) (param i32) (result i32)
    (select (i32.const 0) (i32.const 8) (call $is_stdio (local.get $fd))))

  (func (export "fd_filestat_get") (param $fd i32) (param $out i32) (result i32)
    (if (i32.eqz (call $is_stdio (local.get $fd))) (then (return (i32.const 8))))
    (memory.fill (local.get $out) (i32.const 0) (i32.const 64))
    (i32.store8 offset=16 (local.get $out) (i32.const 2))
    i32.const 0)

  (func (export "fd_close") (param $fd i32) (result i32)
    (select (i32.const 0) (i32.const 8) (call $is_stdio (local.get $fd))))

  (func (export "fd_seek") (param $fd i32) (param i64 i32 i32) (result i32)
    (select (i32.const 70) (i32.const 8) (call $is_stdio (local.get $fd))))
  (func (export "fd_tell") (param $fd i32) (param i32) (result i32)
    (select (i32.const 70) (i32.const 8) (call $is_stdio (local.get $fd))))

  ;; No other fd exists, and none of these applies to 0-2.
  (func (export "fd_advise") (param i32 i64 i64 i32) (result i32) i32.const 8)
  (func (export "fd_allocate") (param i32 i64 i64) (result i32) i32.const 8)
  (func (export "fd_datasync") (param i32) (result i32) i32.const 8)
  (func (export "fd_fdstat_set_rights") (param i32 i64 i64) (result i32) i32.const 8)
  (func (export "fd_filestat_set_size") (param i32 i64) (result i32) i32.const 8)
  (func (export "fd_filestat_set_times") (param i32 i64 i64 i32) (result i32) i32.const 8)
  (func (export "fd_pread") (param i32 i32 i32 i64 i32) (result i32) i32.const 8)
  (func (export "fd_prestat_get") (param i32 i32) (result i32) i32.const 8)
  (func (export "fd_prestat_dir_name") (param i32 i32 i32) (result i32) i32.const 8)
  (func (export "fd_pwrite") (param i32 i32 i32 i64 i32) (result i32) i32.const 8)
  (func (export "fd_readdir") (param i32 i32 i32 i64 i32) (result i32) i32.const 8)
  (func (export "fd_renumber") (param i32 i32) (result i32) i32.const 8)
  (func (export "fd_sync") (param i32) (result i32) i32.const 8)
  (func (export "sock_accept") (param i32 i32 i32) (result i32) i32.const 8)
  (func (export "sock_recv") (param i32 i32 i32 i32 i32 i32) (result i32) i32.const 8)
  (func (export "sock_send") (param i32 i32 i32 i32 i32) (result i32) i32.const 8)
  (func (export "sock_shutdown") (param i32 i32) (result i32) i32.const 8)

  ;; No filesystem capability.
  (func (export "path_create_directory") (param i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_filestat_get") (param i32 i32 i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_filestat_set_times") (param i32 i32 i32 i32 i64 i64 i32) (result i32) i32.const 76)
  (func (export "path_link") (param i32 i32 i32 i32 i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_open") (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32) i32.const 76)
  (func (export "path_readlink") (param i32 i32 i32 i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_remove_directory") (param i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_rename") (param i32 i32 i32 i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_symlink") (param i32 i32 i32 i32 i32) (result i32) i32.const 76)
  (func (export "path_unlink_file") (param i32 i32 i32) (result i32) i32.const 76)

  (func (export "proc_exit") (param $code i32)
    (call $exit (i32.ne (local.get $code) (i32.const 0)))
    unreachable)
  (func (export "proc_raise") (param i32) (result i32) i32.const 52)
  (func (export "sched_yield") (result i32) i32.const 0)

  ;; The monotonic instant a clock subscription (48 bytes at $sub) is due,
  ;; for a poll that started at monotonic $start; -1 (never) for a clock
  ;; other than realtime and monotonic.
  (func $due (param $sub i32) (param $start i64) (result i64)
    (local $clock i32) (local $timeout i64) (local $now i64) (local $due i64)
    (local.set $clock (i32.load offset=16 (local.get $sub)))
    (local.set $timeout (i64.load offset=24 (local.get $sub)))
    (if (i32.gt_u (local.get $clock) (i32.const 1)) (then (return (i64.const -1))))
    (if (i32.eqz (i32.and (i32.load16_u offset=40 (local.get $sub)) (i32.const 1)))
      (then
        ;; Relative: $start + $timeout, saturating.
        (local.set $due (i64.add (local.get $start) (local.get $timeout)))
        (return (select (i64.const -1) (local.get $due) (i64.lt_u (local.get $due) (local.get $start))))))
    (if (i32.eq (local.get $clock) (i32.const 1)) (then (return (local.get $timeout))))
    ;; Absolute realtime: as far from $start as it is from now.
    (local.set $now (call $realtime))
    (if (i64.le_u (local.get $timeout) (local.get $now)) (then (return (local.get $start))))
    (local.set $due (i64.add (local.get $start) (i64.sub (local.get $timeout) (local.get $now))))
    (select (i64.const -1) (local.get $due) (i64.lt_u (local.get $due) (local.get $start))))

  ;; Writes event $n (32 bytes) at $out: userdata, errno, type, and for an
  ;; fd event `nbytes` 0 and flags $flags.
  (func $event (param $out i32) (param $n i32) (param $sub i32) (param $errno i32) (param $flags i32)
    (local $event i32)
    (local.set $event (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 5))))
    (i64.store (local.get $event) (i64.load (local.get $sub)))
    (i32.store16 offset=8 (local.get $event) (local.get $errno))
    (i32.store8 offset=10 (local.get $event) (i32.load8_u offset=8 (local.get $sub)))
    (i64.store offset=16 (local.get $event) (i64.const 0))
    (i64.store offset=24 (local.get $event) (i64.extend_i32_u (local.get $flags))))

  (func (export "poll_oneoff") (param $in i32) (param $out i32) (param $count i32) (param $events_out i32) (result i32)
    (local $i i32) (local $sub i32) (local $tag i32) (local $fd i32) (local $events i32)
    (local $start i64) (local $earliest i64) (local $due i64) (local $now i64) (local $pollable i32)
    (if (i32.eqz (local.get $count)) (then (return (i32.const 28))))
    (local.set $start (call $monotonic_now))
    (local.set $earliest (i64.const -1))
    ;; First pass: fd subscriptions are answered at once; a clock other
    ;; than realtime and monotonic is EINVAL; the earliest clock is noted.
    (loop $subs
      (local.set $sub (i32.add (local.get $in) (i32.mul (local.get $i) (i32.const 48))))
      (local.set $tag (i32.load8_u offset=8 (local.get $sub)))
      (if (i32.eqz (local.get $tag))
        (then
          (if (i32.gt_u (i32.load offset=16 (local.get $sub)) (i32.const 1))
            (then
              (call $event (local.get $out) (local.get $events) (local.get $sub) (i32.const 28) (i32.const 0))
              (local.set $events (i32.add (local.get $events) (i32.const 1))))
            (else
              (local.set $due (call $due (local.get $sub) (local.get $start)))
              (if (i64.lt_u (local.get $due) (local.get $earliest)) (then (local.set $earliest (local.get $due)))))))
        (else
          (local.set $fd (i32.load offset=16 (local.get $sub)))
          (if (i32.or
                (i32.and (i32.eq (local.get $tag) (i32.const 1)) (i32.eqz (local.get $fd)))
                (i32.and (i32.eq (local.get $tag) (i32.const 2))
                  (i32.or (i32.eq (local.get $fd) (i32.const 1)) (i32.eq (local.get $fd) (i32.const 2)))))
            ;; stdin reads end at once (hangup); stdout and stderr are writable.
            (then (call $event (local.get $out) (local.get $events) (local.get $sub) (i32.const 0)
              (i32.eq (local.get $tag) (i32.const 1))))
            (else (call $event (local.get $out) (local.get $events) (local.get $sub) (i32.const 8) (i32.const 0))))
          (local.set $events (i32.add (local.get $events) (i32.const 1)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $subs (i32.lt_u (local.get $i) (local.get $count))))
    (if (i32.eqz (local.get $events)) (then
      ;; Sleep until the earliest clock is due (every subscription is a
      ;; clock here, so there is one).
      (block $awake
        (loop $sleep
          (local.set $now (call $monotonic_now))
          (br_if $awake (i64.ge_u (local.get $now) (local.get $earliest)))
          (local.set $pollable (call $subscribe_duration (i64.sub (local.get $earliest) (local.get $now))))
          (call $block (local.get $pollable))
          (call $drop_pollable (local.get $pollable))
          (br $sleep)))
      ;; Second pass: every clock due by now fires.
      (local.set $i (i32.const 0))
      (loop $fire
        (local.set $sub (i32.add (local.get $in) (i32.mul (local.get $i) (i32.const 48))))
        (if (i64.le_u (call $due (local.get $sub) (local.get $start)) (local.get $now)) (then
          (call $event (local.get $out) (local.get $events) (local.get $sub) (i32.const 0) (i32.const 0))
          (local.set $events (i32.add (local.get $events) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $fire (i32.lt_u (local.get $i) (local.get $count))))))
    (i32.store (local.get $events_out) (local.get $events))
    i32.const 0)
)
