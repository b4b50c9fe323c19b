import CSupport

/// A signal as a call on a loop thread (nothing runs in the handler). Held by the C side until
/// `cancel()` or loop shutdown.
package final class SignalWatcher {
    private var raw: OpaquePointer?
    private var action: ((Int32) -> Void)?

    /// Nil when libuv cannot (the default action stays).
    package init?(on loop: EventLoop, signal: Int32, _ action: @escaping (Int32) -> Void) {
        loop.assertInLoop()
        self.action = action
        var callbacks = cs_signal_callbacks(
            on_signal: { ctx, signum in
                Unmanaged<SignalWatcher>.fromOpaque(ctx!).takeUnretainedValue().action?(signum)
            },
            on_close: { ctx in
                let watcher = Unmanaged<SignalWatcher>.fromOpaque(ctx!).takeRetainedValue()
                watcher.raw = nil
                watcher.action = nil
            }
        )
        let ctx = Unmanaged.passRetained(self).toOpaque()
        raw = cs_signal_start(loop.raw, signal, &callbacks, ctx)
        if raw == nil {
            Unmanaged<SignalWatcher>.fromOpaque(ctx).release()
            return nil
        }
    }

    /// The default action applies again.
    package func cancel() {
        action = nil
        if let raw { cs_signal_close(raw) }
    }
}
