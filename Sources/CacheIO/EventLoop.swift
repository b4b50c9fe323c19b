import CSupport

/// An error of the C core, with its negative error code.
package struct IOError: Error, CustomStringConvertible, Sendable {
    package let code: Int32
    package let context: String
    package init(code: Int32, _ context: String) {
        self.code = code
        self.context = context
    }
    package var description: String { "\(context): \(String(cString: cs_strerror(code)))" }
}

/// The C core's libuv loop thread. `execute` and `shutdown` are thread-safe; everything else
/// touching the loop runs on its thread, which `assertInLoop()` checks where the compiler can't.
package final class EventLoop: @unchecked Sendable {
    // Immutable after init; the C loop does its own locking for posts.
    let raw: OpaquePointer
    private let stopped = Locked(false)  // set by shutdown; held while posting so no post can race the free

    package init() throws {
        var message = [CChar](repeating: 0, count: 256)
        guard let loop = cs_loop_start(&message, message.count) else {
            throw IOError(code: -1, "cannot start event loop (\(String(cChars: message)))")
        }
        raw = loop
    }

    /// Runs `task` on the loop thread. Returns false once the loop is stopping.
    @discardableResult
    package func execute(_ task: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(TaskBox(task)).toOpaque()
        let status = stopped.withLock { stopped -> Int32 in
            guard !stopped else { return -1 }
            return cs_loop_post(raw, { ctx in Unmanaged<TaskBox>.fromOpaque(ctx!).takeRetainedValue().value() }, box)
        }
        if status != 0 {
            Unmanaged<TaskBox>.fromOpaque(box).release()
            return false
        }
        return true
    }

    /// Runs `task` on the loop thread and waits for its result. Not from the loop thread.
    package func submitAndWait<T: Sendable>(_ task: @escaping @Sendable () -> T) -> T? {
        if stopped.withLock({ $0 }) { return nil }
        precondition(!inLoop, "submitAndWait would deadlock on the loop thread")
        let done = OneShot<T>()
        guard execute({ done.put(task()) }) else { return nil }
        return done.take()
    }

    /// Runs `task` on a later turn, after the current callback unwinds. It never leaves the loop
    /// thread, so it need not be Sendable.
    package func executeLater(_ task: @escaping () -> Void) {
        assertInLoop()
        let box = Box(task)
        execute { box.value() }
    }

    package var inLoop: Bool { cs_loop_is_current(raw) != 0 }

    /// Checked in release builds too: a few nanoseconds against a silent data race.
    package func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inLoop, "must run on the event loop thread", file: file, line: line)
    }

    /// Monotonic (loop thread).
    package var nowMilliseconds: UInt64 { cs_loop_now_ms(raw) }

    /// Closes every handle, runs their close callbacks, joins the thread; then posts are refused.
    package func shutdown() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        precondition(!inLoop, "shutdown from the loop thread would deadlock")
        cs_loop_stop(raw)
    }

    /// `work` on the thread pool (blocking file work), then `done` on the loop thread.
    package func offload<T: Sendable>(_ work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        assertInLoop()
        let slot = ResultSlot<T>()
        // libuv orders the two phases (work happens-before done): the box is never touched concurrently.
        let box = WorkBox((work: { slot.value = work() }, done: { done(slot.value!) }))
        let ctx = Unmanaged.passRetained(box).toOpaque()
        let status = cs_work_submit(raw, { ctx in
            Unmanaged<WorkBox>.fromOpaque(ctx!).takeUnretainedValue().value.work()
        }, { ctx in
            Unmanaged<WorkBox>.fromOpaque(ctx!).takeRetainedValue().value.done()
        }, ctx)
        if status != 0 {
            // The pool refused (loop stopping): do the work inline rather than lose it.
            Unmanaged<WorkBox>.fromOpaque(ctx).release()
            done(work())
        }
    }

    package func resolve(host: String, port: Int, _ completion: @escaping (Result<[SocketAddress], IOError>) -> Void) {
        assertInLoop()
        let box = Unmanaged.passRetained(ResolveBox(completion)).toOpaque()
        let status = cs_resolve(raw, host, Int32(port), { ctx, status, addrs, count in
            let completion = Unmanaged<ResolveBox>.fromOpaque(ctx!).takeRetainedValue().value
            guard status == 0, count > 0 else {
                return completion(.failure(IOError(code: status == 0 ? -2 : status, "resolve")))
            }
            completion(.success((0..<count).map { SocketAddress(storage: addrs![$0]) }))
        }, box)
        if status != 0 {
            let completion = Unmanaged<ResolveBox>.fromOpaque(box).takeRetainedValue().value
            completion(.failure(IOError(code: status, "resolve \(host)")))
        }
    }
}

/// A C context, or (`executeLater`) a loop-thread closure: never used from two threads at once.
private final class Box<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

private typealias TaskBox = Box<@Sendable () -> Void>
private typealias WorkBox = Box<(work: () -> Void, done: () -> Void)>
private typealias ResolveBox = Box<(Result<[SocketAddress], IOError>) -> Void>

private final class ResultSlot<T>: @unchecked Sendable {
    var value: T?
}

extension String {
    /// From a NUL-terminated buffer.
    package init(cChars buffer: [CChar]) {
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
