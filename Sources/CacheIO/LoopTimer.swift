import CSupport

/// Held by the C side until `cancel()` or loop shutdown.
package final class LoopTimer {
    private var raw: OpaquePointer?
    private var action: (() -> Void)?

    /// Then every `repeatMilliseconds` if non-zero.
    package init(on loop: EventLoop, after milliseconds: UInt64, repeat repeatMilliseconds: UInt64 = 0,
                 _ action: @escaping () -> Void) {
        loop.assertInLoop()
        self.action = action
        var callbacks = cs_timer_callbacks(
            on_fire: { ctx in Unmanaged<LoopTimer>.fromOpaque(ctx!).takeUnretainedValue().action?() },
            on_close: { ctx in
                let timer = Unmanaged<LoopTimer>.fromOpaque(ctx!).takeRetainedValue()
                timer.raw = nil
                timer.action = nil
            }
        )
        let ctx = Unmanaged.passRetained(self).toOpaque()
        raw = cs_timer_start(loop.raw, milliseconds, repeatMilliseconds, &callbacks, ctx)
        if raw == nil { Unmanaged<LoopTimer>.fromOpaque(ctx).release() }
    }

    package func reset(milliseconds: UInt64) {
        if let raw { cs_timer_reset(raw, milliseconds) }
    }

    package func cancel() {
        action = nil
        if let raw { cs_timer_close(raw) }
    }
}
