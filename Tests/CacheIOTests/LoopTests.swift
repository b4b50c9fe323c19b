// The loop, post queue, stop, timers, DNS, thread-pool work, errors and SHA-256.
import CSupport
import Dispatch
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class LoopTests: XCTestCase {
    func testPostFromSeveralThreadsRunsAllInPerThreadOrder() throws {
        let h = try LoopHarness()
        let threads = 4, perThread = 2000
        let seen = Shared([[Int]](repeating: [], count: threads))
        let ref = LoopRef(h.loop)
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                for i in 0..<perThread {
                    let rc = postJob(ref.ptr) {
                        XCTAssertEqual(cs_loop_is_current(ref.ptr), 1)
                        seen.update { $0[t].append(i) }
                    }
                    XCTAssertEqual(rc, 0)
                }
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + testTimeout), .success)
        XCTAssertTrue(seen.wait { $0.allSatisfy { $0.count == perThread } })
        for t in 0..<threads {
            XCTAssertEqual(seen.value[t], Array(0..<perThread), "thread \(t) out of order")
        }
        XCTAssertEqual(cs_loop_is_current(h.loop), 0)
        h.stop()
    }

    func testTasksAcceptedBeforeStopRunAndLaterPostsAreRefused() throws {
        let h = try LoopHarness()
        struct State { var accepted = 0; var ran = 0; var refusal: Int32 = 0 }
        let state = Shared(State())
        let loop = h.loop
        // The first task keeps posting from the loop thread until stop begins;
        // everything accepted by then must still run before cs_loop_stop returns.
        let started = DispatchSemaphore(value: 0)
        h.post {
            started.signal()
            let deadline = Date(timeIntervalSinceNow: 5)
            while Date() < deadline {
                let rc = postJob(loop) { state.update { $0.ran += 1 } }
                if rc != 0 {
                    state.update { $0.refusal = rc }
                    return
                }
                state.update { $0.accepted += 1 }
                usleep(500)
            }
        }
        XCTAssertEqual(started.wait(timeout: .now() + testTimeout), .success)
        usleep(20_000)
        h.stop()
        let s = state.value
        XCTAssertEqual(s.refusal, -ESHUTDOWN)
        XCTAssertGreaterThan(s.accepted, 0)
        XCTAssertEqual(s.ran, s.accepted)
    }

    func testNowAdvances() throws {
        let h = try LoopHarness()
        var first: UInt64 = 0, second: UInt64 = 0
        h.sync { first = cs_loop_now_ms(h.loop) }
        usleep(30_000)
        h.sync { second = cs_loop_now_ms(h.loop) }
        XCTAssertGreaterThanOrEqual(second, first + 20)
        h.stop()
    }

    // MARK: timers

    final class TimerProbe {
        var timer: OpaquePointer?
        struct Log { var fires: [UInt64] = []; var closes = 0 }
        let log = Shared(Log())
        var onFire: ((TimerProbe) -> Void)?
        var loop: OpaquePointer?

        func start(_ loop: OpaquePointer, timeout: UInt64, repeat rep: UInt64) -> Bool {
            self.loop = loop
            var cbs = cs_timer_callbacks()
            cbs.on_fire = { ctx in
                let p = Unmanaged<TimerProbe>.fromOpaque(ctx!).takeUnretainedValue()
                p.log.update { $0.fires.append(cs_loop_now_ms(p.loop)) }
                p.onFire?(p)
            }
            cbs.on_close = { ctx in
                let p = Unmanaged<TimerProbe>.fromOpaque(ctx!).takeRetainedValue()
                p.timer = nil
                p.log.update { $0.closes += 1 }
            }
            let ctx = Unmanaged.passRetained(self).toOpaque()
            timer = cs_timer_start(loop, timeout, rep, &cbs, ctx)
            if timer == nil { Unmanaged<TimerProbe>.fromOpaque(ctx).release() }
            return timer != nil
        }
    }

    func testOneShotTimerFiresOnce() throws {
        let h = try LoopHarness()
        let t = TimerProbe()
        var start: UInt64 = 0
        h.sync {
            start = cs_loop_now_ms(h.loop)
            XCTAssertTrue(t.start(h.loop, timeout: 20, repeat: 0))
        }
        XCTAssertTrue(t.log.wait { $0.fires.count == 1 })
        usleep(100_000)
        XCTAssertEqual(t.log.value.fires.count, 1)
        XCTAssertGreaterThanOrEqual(t.log.value.fires[0], start + 20)
        h.sync { cs_timer_close(t.timer); cs_timer_close(t.timer) } // twice is harmless
        XCTAssertTrue(t.log.wait { $0.closes == 1 })
        h.stop()
        XCTAssertEqual(t.log.value.closes, 1)
    }

    func testRepeatingTimerClosedFromItsOwnCallback() throws {
        let h = try LoopHarness()
        let t = TimerProbe()
        t.onFire = { p in
            if p.log.value.fires.count == 5 { cs_timer_close(p.timer) }
        }
        h.sync { XCTAssertTrue(t.start(h.loop, timeout: 5, repeat: 5)) }
        XCTAssertTrue(t.log.wait { $0.closes == 1 })
        usleep(50_000)
        XCTAssertEqual(t.log.value.fires.count, 5)
        h.stop()
        XCTAssertEqual(t.log.value.closes, 1)
    }

    func testResetPostponesAndRearms() throws {
        let h = try LoopHarness()
        // Postpone: a 30 ms timer reset to 250 ms fires no earlier than 250 ms.
        let late = TimerProbe()
        var resetAt: UInt64 = 0
        h.sync {
            XCTAssertTrue(late.start(h.loop, timeout: 30, repeat: 0))
            resetAt = cs_loop_now_ms(h.loop)
            cs_timer_reset(late.timer, 250)
        }
        XCTAssertTrue(late.log.wait { $0.fires.count == 1 })
        XCTAssertGreaterThanOrEqual(late.log.value.fires[0], resetAt + 250)

        // Re-arm: a fired one-shot timer reset from on_fire fires again.
        let again = TimerProbe()
        again.onFire = { p in
            if p.log.value.fires.count < 3 { cs_timer_reset(p.timer, 10) } else { cs_timer_close(p.timer) }
        }
        h.sync { XCTAssertTrue(again.start(h.loop, timeout: 10, repeat: 0)) }
        XCTAssertTrue(again.log.wait { $0.closes == 1 })
        XCTAssertEqual(again.log.value.fires.count, 3)

        h.sync { cs_timer_close(late.timer) }
        h.stop()
        XCTAssertEqual(late.log.value.closes, 1)
    }

    // MARK: DNS, work, errors, crypto

    final class ResolveProbe {
        struct Result { var status: Int32 = 1; var addrs: [sockaddr_storage] = []; var calls = 0 }
        let result = Shared(Result())

        func resolve(_ loop: OpaquePointer, _ host: String, port: Int32) -> Int32 {
            let ctx = Unmanaged.passRetained(self).toOpaque()
            let rc = cs_resolve(loop, host, port, { ctx, status, addrs, count in
                let p = Unmanaged<ResolveProbe>.fromOpaque(ctx!).takeRetainedValue()
                let list = Array(UnsafeBufferPointer(start: addrs, count: count))
                p.result.update { $0.status = status; $0.addrs = list; $0.calls += 1 }
            }, ctx)
            if rc != 0 { Unmanaged<ResolveProbe>.fromOpaque(ctx).release() }
            return rc
        }
    }

    /// Port and whether the address is a loopback one.
    static func describe(_ ss: sockaddr_storage) -> (port: Int, loopback: Bool) {
        let family = ss.ss_family
        return withUnsafeBytes(of: ss) { raw in
            let p = raw.baseAddress!.assumingMemoryBound(to: sockaddr_storage.self)
            if family == sa_family_t(AF_INET) {
                let a = p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                return (Int(UInt16(bigEndian: a.sin_port)), UInt32(bigEndian: a.sin_addr.s_addr) >> 24 == 127)
            }
            let a = p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
            let bytes = withUnsafeBytes(of: a.sin6_addr) { Array($0) }
            return (Int(UInt16(bigEndian: a.sin6_port)), bytes == [UInt8](repeating: 0, count: 15) + [1])
        }
    }

    func testResolveLocalhostAndLiteral() throws {
        let h = try LoopHarness()
        let name = ResolveProbe(), literal = ResolveProbe()
        h.sync {
            XCTAssertEqual(name.resolve(h.loop, "localhost", port: 8080), 0)
            XCTAssertEqual(literal.resolve(h.loop, "127.0.0.1", port: 443), 0)
            XCTAssertEqual(ResolveProbe().resolve(h.loop, "localhost", port: 70000), -EINVAL)
        }
        XCTAssertTrue(name.result.wait { $0.calls == 1 })
        XCTAssertTrue(literal.result.wait { $0.calls == 1 })
        XCTAssertEqual(name.result.value.status, 0)
        XCTAssertFalse(name.result.value.addrs.isEmpty)
        for a in name.result.value.addrs {
            XCTAssertEqual(Self.describe(a).port, 8080)
            XCTAssertTrue(Self.describe(a).loopback)
        }
        XCTAssertEqual(literal.result.value.status, 0)
        XCTAssertEqual(literal.result.value.addrs.count, 1)
        XCTAssertEqual(Self.describe(literal.result.value.addrs[0]).port, 443)
        h.stop()
    }

    func testWorkRunsOffLoopThenDoneOnLoop() throws {
        let h = try LoopHarness()
        final class Work {
            var loop: OpaquePointer?
            var workOnLoop: Int32 = -1
            var doneOnLoop: Int32 = -1
            var order: [String] = []
            let finished = Shared(false)
        }
        let items = (0..<8).map { _ in Work() }
        h.sync {
            for w in items {
                w.loop = h.loop
                let rc = cs_work_submit(h.loop, { ctx in
                    let w = Unmanaged<Work>.fromOpaque(ctx!).takeUnretainedValue()
                    w.workOnLoop = cs_loop_is_current(w.loop)
                    w.order.append("work")
                    usleep(10_000)
                }, { ctx in
                    let w = Unmanaged<Work>.fromOpaque(ctx!).takeRetainedValue()
                    w.doneOnLoop = cs_loop_is_current(w.loop)
                    w.order.append("done")
                    w.finished.update { $0 = true }
                }, Unmanaged.passRetained(w).toOpaque())
                XCTAssertEqual(rc, 0)
            }
        }
        for w in items {
            XCTAssertTrue(w.finished.wait { $0 })
            XCTAssertEqual(w.workOnLoop, 0)
            XCTAssertEqual(w.doneOnLoop, 1)
            XCTAssertEqual(w.order, ["work", "done"])
        }
        h.stop()
    }

    func testStrerror() {
        XCTAssertEqual(String(cString: cs_strerror(-ECONNREFUSED)), "connection refused")
        XCTAssertEqual(String(cString: cs_strerror(-EPIPE)), "broken pipe")
        XCTAssertFalse(String(cString: cs_strerror(-3008)).isEmpty) // UV_EAI_NONAME
        XCTAssertFalse(String(cString: cs_strerror(-987_654)).isEmpty) // unknown code
        XCTAssertFalse(String(cString: cs_strerror(0)).isEmpty)
    }

    func testSha256() {
        func hex(_ input: [UInt8]) -> String {
            var out = [UInt8](repeating: 0, count: 32)
            input.withUnsafeBytes { cs_sha256($0.baseAddress, $0.count, &out) }
            return out.map { String(format: "%02x", $0) }.joined()
        }
        XCTAssertEqual(hex(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex([]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
