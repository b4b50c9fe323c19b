/// A timeout that is pushed back far more often than it fires — the idle
/// timeout of a keep-alive connection, reset on every request. `reset` only
/// records the new due time; the libuv timer is re-armed when it fires before
/// that time or when the deadline moves earlier. Loop thread only. Its owner
/// may capture itself unowned in the action: the timer stops with the deadline.
package final class Deadline {
    private let loop: EventLoop
    private var timer: LoopTimer?
    private var action: (() -> Void)?
    /// Loop time (ms) at which the action is due.
    private var due: UInt64
    /// Loop time (ms) the timer is set to fire at, while it is armed.
    private var firesAt: UInt64?

    package init(on loop: EventLoop, after milliseconds: UInt64, _ action: @escaping () -> Void) {
        self.loop = loop
        self.action = action
        due = loop.nowMilliseconds + milliseconds
        firesAt = due
        // Unowned: the timer is cancelled when the deadline goes (deinit), and
        // no weak reference means no side table on the deadline.
        timer = LoopTimer(on: loop, after: milliseconds) { [unowned self] in self.fired() }
    }

    deinit { timer?.cancel() }

    /// The action is now due `milliseconds` from now.
    package func reset(milliseconds: UInt64) {
        let now = loop.nowMilliseconds
        due = now + milliseconds
        if let firesAt, firesAt <= due { return }  // it fires in time and re-arms then
        firesAt = due
        timer?.reset(milliseconds: milliseconds)
    }

    package func cancel() {
        action = nil
        timer?.cancel()
        timer = nil
    }

    private func fired() {
        let now = loop.nowMilliseconds
        if now < due {
            firesAt = due
            timer?.reset(milliseconds: due - now)
            return
        }
        firesAt = nil
        action?()
    }
}
