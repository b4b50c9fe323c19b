/// A timeout pushed back far more often than it fires (a keep-alive idle timeout): `reset`
/// records the due time; the timer is re-armed when it fires early or the deadline moves
/// earlier. Loop thread only. The owner may capture itself unowned: the timer stops with it.
package final class Deadline {
    private let loop: EventLoop
    private var timer: LoopTimer?
    private var action: (() -> Void)?
    private var due: UInt64  // loop time (ms)
    private var firesAt: UInt64?  // when the timer fires, while armed

    package init(on loop: EventLoop, after milliseconds: UInt64, _ action: @escaping () -> Void) {
        self.loop = loop
        self.action = action
        due = loop.nowMilliseconds + milliseconds
        firesAt = due
        // Unowned: deinit cancels the timer, and no weak reference means no side table.
        timer = LoopTimer(on: loop, after: milliseconds) { [unowned self] in self.fired() }
    }

    deinit { timer?.cancel() }

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
