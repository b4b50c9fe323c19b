// cs_signal: a process signal delivered as a callback on the loop thread.
import CSupport
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class SignalTests: XCTestCase {
    private final class Probe: @unchecked Sendable {
        struct Log { var signals: [Int32] = []; var onLoop = true; var closes = 0 }
        let log = Shared(Log())
        var watcher: OpaquePointer?
        var loop: OpaquePointer?

        func start(_ loop: OpaquePointer, _ signum: Int32) -> Bool {
            self.loop = loop
            var callbacks = cs_signal_callbacks()
            callbacks.on_signal = { ctx, signum in
                let probe = Unmanaged<Probe>.fromOpaque(ctx!).takeUnretainedValue()
                let onLoop = cs_loop_is_current(probe.loop) == 1
                probe.log.update { $0.signals.append(signum); $0.onLoop = $0.onLoop && onLoop }
            }
            callbacks.on_close = { ctx in
                let probe = Unmanaged<Probe>.fromOpaque(ctx!).takeRetainedValue()
                probe.watcher = nil
                probe.log.update { $0.closes += 1 }
            }
            let ctx = Unmanaged.passRetained(self).toOpaque()
            watcher = cs_signal_start(loop, signum, &callbacks, ctx)
            if watcher == nil { Unmanaged<Probe>.fromOpaque(ctx).release() }
            return watcher != nil
        }
    }

    /// Each signal sent to the process reaches the watcher on the loop
    /// thread, whichever thread the kernel interrupted; the loop's stop
    /// closes a watcher still open, reporting it once.
    func testSignalReachesTheLoopThread() throws {
        let h = try LoopHarness()
        let probe = Probe()
        h.sync { XCTAssertTrue(probe.start(h.loop, SIGUSR2)) }
        for count in 1...2 {
            XCTAssertEqual(kill(getpid(), SIGUSR2), 0)
            XCTAssertTrue(probe.log.wait { $0.signals.count == count })
        }
        XCTAssertEqual(probe.log.value.signals, [SIGUSR2, SIGUSR2])
        XCTAssertTrue(probe.log.value.onLoop)
        h.stop()
        XCTAssertEqual(probe.log.value.closes, 1)
    }
}
