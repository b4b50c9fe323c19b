// Listener and connection tests over real loopback sockets.
import CSupport
import Dispatch
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class ConnTests: XCTestCase {
    /// Accepts conns with an echo probe: every read is written back, EOF
    /// closes after drain. The probes are collected for inspection.
    func echoServer(_ h: LoopHarness) -> (ListenerProbe, Int, Shared<[ConnProbe]>) {
        let conns = Shared([ConnProbe]())
        let (listener, port) = startListener(h) { conn in
            let p = ConnProbe()
            p.keepReceived = false
            p.onRead = { p, buf in
                XCTAssertEqual(cs_conn_write(p.conn, buf.baseAddress, buf.count), 0)
            }
            p.onEOF = { p in cs_conn_close_after_drain(p.conn) }
            p.bind(conn)
            XCTAssertEqual(cs_conn_read_start(conn), 0)
            conns.update { $0.append(p) }
        }
        return (listener, port, conns)
    }

    func testEchoWithBlockingClient() throws {
        let h = try LoopHarness()
        let (listener, port, conns) = echoServer(h)
        let client = try BlockingClient(port: port)
        for i in 0..<20 {
            let msg = Array("message \(i) ".utf8) + patternBytes(1000 * i, seed: UInt64(i + 1))
            XCTAssertTrue(client.send(msg))
            XCTAssertEqual(client.recv(exactly: msg.count), msg)
        }
        client.shutdownWrite()
        let (rest, err) = client.readToEOF()
        XCTAssertEqual(err, 0)
        XCTAssertEqual(rest, [])

        XCTAssertTrue(conns.wait { $0.count == 1 })
        let server = conns.value[0]
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        XCTAssertEqual(server.log.value.eofs, 1)
        XCTAssertEqual(server.log.value.closes, [0])

        h.sync { cs_listener_close(listener.listener); cs_listener_close(listener.listener) }
        XCTAssertTrue(listener.log.wait { $0.closes == 1 })
        h.stop()
        XCTAssertEqual(listener.log.value.closes, 1)
        XCTAssertEqual(listener.log.value.accepted, 1)
    }

    func testConnectWritesWhileConnectingAndEchoes() throws {
        let h = try LoopHarness()
        let (_, port, _) = echoServer(h)
        let payload = patternBytes(3 << 20, seed: 42)
        let client = ConnProbe()
        client.onConnect = { p, status in
            if status == 0 { XCTAssertEqual(cs_conn_read_start(p.conn), 0) }
        }
        client.onRead = { p, _ in
            if p.log.value.received.count == payload.count { cs_conn_close(p.conn) }
        }
        var queuedAfterWrites = 0
        h.sync {
            XCTAssertEqual(client.connect(h.loop, port: port), 0)
            // Everything written before the connection completes is queued,
            // many small writes append into the same memory items.
            payload.withUnsafeBytes { buf in
                var off = 0, step = 1
                while off < buf.count {
                    let n = min(step, buf.count - off)
                    XCTAssertEqual(cs_conn_write(client.conn, buf.baseAddress! + off, n), 0)
                    off += n
                    step = step * 3 % 70_001 + 1
                }
            }
            queuedAfterWrites = cs_conn_queued(client.conn)
        }
        XCTAssertEqual(queuedAfterWrites, payload.count)
        XCTAssertTrue(client.log.wait { $0.closes.count == 1 })
        let log = client.log.value
        XCTAssertEqual(log.connects, [0])
        XCTAssertEqual(log.drains, 1)
        XCTAssertEqual(log.closes, [0])
        XCTAssertTrue(log.received == payload, "echo differs")
        h.stop()
    }

    func testConnectRefusedReportsThenCloses() throws {
        let h = try LoopHarness()
        // A port that was just free: bind, read the port, close.
        let (listener, port) = startListener(h) { cs_conn_close($0) }
        h.sync { cs_listener_close(listener.listener) }
        XCTAssertTrue(listener.log.wait { $0.closes == 1 })

        let client = ConnProbe()
        h.sync { XCTAssertEqual(client.connect(h.loop, port: port), 0) }
        XCTAssertTrue(client.log.wait { $0.closes.count == 1 })
        XCTAssertEqual(client.log.value.connects, [-ECONNREFUSED])
        XCTAssertEqual(client.log.value.closes, [-ECONNREFUSED])
        h.stop()
    }

    func testSendfileToSlowReader() throws {
        let h = try LoopHarness()
        let body = patternBytes(8 << 20, seed: 7)
        let file = try TempFile(body)
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 8388608\r\n\r\n".utf8)
        let tail = Array("-- end --".utf8)
        let server = ConnProbe()
        var queuedAfterCalls = 0
        server.onDrain = { p in
            XCTAssertEqual(cs_conn_queued(p.conn), 0)
            XCTAssertEqual(cs_conn_bytes_sent(p.conn), UInt64(head.count + body.count + tail.count))
            cs_conn_close_after_drain(p.conn)
        }
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            XCTAssertEqual(cs_conn_write(conn, head, head.count), 0)
            // Two adjacent ranges (merged in the queue) and bytes after them.
            XCTAssertEqual(cs_conn_sendfile(conn, file.fd, 0, 3 << 20), 0)
            XCTAssertEqual(cs_conn_sendfile(conn, file.fd, 3 << 20, 5 << 20), 0)
            XCTAssertEqual(cs_conn_write(conn, tail, tail.count), 0)
            queuedAfterCalls = cs_conn_queued(conn)
        }
        let client = try BlockingClient(port: port, receiveBuffer: 32 * 1024)
        let (got, err) = client.readToEOF(chunk: 16 * 1024, pauseMicros: 300)
        XCTAssertEqual(err, 0)
        XCTAssertEqual(got.count, head.count + body.count + tail.count)
        XCTAssertTrue(got == head + body + tail, "sendfile output differs")
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertGreaterThan(queuedAfterCalls, 0, "the reader never made the sender wait")
        XCTAssertEqual(server.log.value.drains, 1)
        XCTAssertEqual(server.log.value.closes, [0])
        h.stop()
    }

    func testInterleavedMemoryAndFileItemsKeepOrder() throws {
        let h = try LoopHarness()
        let fileBytes = patternBytes(1 << 20, seed: 99)
        let file = try TempFile(fileBytes)
        // A large first write fills the socket so everything after it is
        // queued: small writes, contiguous and separate file ranges.
        var expected = patternBytes(4 << 20, seed: 5)
        var pieces: [(isFile: Bool, bytes: [UInt8], offset: Int, len: Int)] = [(false, expected, 0, 0)]
        var offset = 0
        for i in 0..<60 {
            let text = Array("<part \(i)>".utf8)
            pieces.append((false, text, 0, 0))
            expected += text
            let len = (i * 7919) % 20_000 + 1
            if i % 3 != 0 { offset = (i * 104_729) % (fileBytes.count - len) } // else contiguous
            pieces.append((true, [], offset, len))
            expected += fileBytes[offset..<offset + len]
            offset += len
            if i % 5 == 0 { // two files ranges in a row that merge
                pieces.append((true, [], offset, 100))
                expected += fileBytes[offset..<offset + 100]
                offset += 100
            }
        }
        let server = ConnProbe()
        server.onDrain = { p in cs_conn_close_after_drain(p.conn) }
        var queued = 0
        let accepted = DispatchSemaphore(value: 0)
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            for piece in pieces {
                if piece.isFile {
                    XCTAssertEqual(cs_conn_sendfile(conn, file.fd, Int64(piece.offset), piece.len), 0)
                } else {
                    XCTAssertEqual(cs_conn_write(conn, piece.bytes, piece.bytes.count), 0)
                }
            }
            queued = cs_conn_queued(conn)
            accepted.signal()
        }
        let client = try BlockingClient(port: port, receiveBuffer: 64 * 1024)
        XCTAssertEqual(accepted.wait(timeout: .now() + testTimeout), .success, "everything queued before the client reads")
        let (got, err) = client.readToEOF(chunk: 32 * 1024, pauseMicros: 100)
        XCTAssertEqual(err, 0)
        XCTAssertEqual(got.count, expected.count)
        XCTAssertTrue(got == expected, "queue order broken")
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertGreaterThan(queued, 0)
        XCTAssertEqual(server.log.value.closes, [0])
        h.stop()
    }

    func testCloseAfterDrainDeliversWholeResponseDespiteUnreadInput() throws {
        let h = try LoopHarness()
        let response = patternBytes(3 << 20, seed: 3)
        let server = ConnProbe()
        server.onRead = { p, _ in
            // Answer the first bytes and close; the rest of the input stays
            // unread in the kernel, which a plain close() would answer with RST.
            XCTAssertEqual(cs_conn_write(p.conn, response, response.count), 0)
            cs_conn_close_after_drain(p.conn)
            cs_conn_close_after_drain(p.conn)
            XCTAssertEqual(cs_conn_write(p.conn, response, 1), -EPIPE)
        }
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            XCTAssertEqual(cs_conn_read_start(conn), 0)
        }
        let client = try BlockingClient(port: port)
        XCTAssertTrue(client.send(Array("GET / HTTP/1.1\r\n\r\n".utf8)))
        usleep(50_000)
        _ = client.sendSome(patternBytes(64 * 1024, seed: 11))
        usleep(200_000)
        let (got, err) = client.readToEOF(chunk: 64 * 1024, pauseMicros: 200)
        XCTAssertEqual(err, 0, "connection reset before the response was read")
        XCTAssertEqual(got.count, response.count)
        XCTAssertTrue(got == response)
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        XCTAssertEqual(server.log.value.closes, [0])
        XCTAssertEqual(server.log.value.drains, 0) // the drain became the close
        h.stop()
    }

    func testEOFOnceAndCloseIsAsynchronousAndIdempotent() throws {
        let h = try LoopHarness()
        let server = ConnProbe()
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            XCTAssertEqual(cs_conn_read_start(conn), 0)
        }
        let client = try BlockingClient(port: port)
        XCTAssertTrue(client.send(Array("ping".utf8)))
        client.shutdownWrite()
        XCTAssertTrue(server.log.wait { $0.eofs == 1 })
        XCTAssertEqual(server.log.value.received, Array("ping".utf8))
        h.sync {
            cs_conn_close(server.conn)
            cs_conn_close(server.conn)
            cs_conn_close_after_drain(server.conn)
            XCTAssertEqual(cs_conn_write(server.conn, "x", 1), -EPIPE)
            XCTAssertEqual(server.log.value.closes, [], "on_close ran inside cs_conn_close")
        }
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        let (_, err) = client.readToEOF()
        XCTAssertEqual(err, 0)
        h.stop()
        XCTAssertEqual(server.log.value.closes, [0])
        XCTAssertEqual(server.log.value.eofs, 1)
    }

    func testSendfileBeyondEndOfFileClosesWithEIO() throws {
        let h = try LoopHarness()
        let file = try TempFile(patternBytes(1000, seed: 1))
        let server = ConnProbe()
        var rc: Int32 = 0
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            rc = cs_conn_sendfile(conn, file.fd, 0, 5000)
        }
        let client = try BlockingClient(port: port)
        let (got, _) = client.readToEOF()
        XCTAssertEqual(got.count, 1000)
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertEqual(rc, -EIO)
        XCTAssertEqual(server.log.value.closes, [-EIO])
        h.stop()
    }

    func testListenAddressForms() throws {
        let h = try LoopHarness()
        h.sync {
            for host in ["127.0.0.1", "0.0.0.0", "::1", "::"] {
                let l = ListenerProbe()
                let rc = l.listen(h.loop, host: host)
                if host.contains(":") && (rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL) { continue } // no IPv6 here
                XCTAssertEqual(rc, 0, host)
                XCTAssertGreaterThan(l.port, 0, host)
                cs_listener_close(l.listener)
            }
            let bad = ListenerProbe()
            XCTAssertEqual(bad.listen(h.loop, host: "localhost"), -EINVAL)
        }
        h.stop()
    }

    func testStopClosesEverythingExactlyOnce() throws {
        let h = try LoopHarness()
        let accepted = Shared([ConnProbe]())
        let (listener, port) = startListener(h) { conn in
            let p = ConnProbe()
            p.bind(conn)
            XCTAssertEqual(cs_conn_read_start(conn), 0)
            accepted.update { $0.append(p) }
        }
        // One conn from a blocking client, one from cs_connect.
        let blocking = try BlockingClient(port: port)
        let outgoing = ConnProbe()
        outgoing.onConnect = { p, status in
            XCTAssertEqual(status, 0)
            XCTAssertEqual(cs_conn_read_start(p.conn), 0)
        }
        h.sync { XCTAssertEqual(outgoing.connect(h.loop, port: port), 0) }
        XCTAssertTrue(outgoing.log.wait { $0.connects.count == 1 })
        XCTAssertTrue(accepted.wait { $0.count == 2 })

        // Timers; the repeating one tries to create handles while closing.
        struct Closes { var timers = 0; var lateTimerRefused = false; var latePost: Int32 = 0 }
        let closes = Shared(Closes())
        final class Ctx { let closes: Shared<Closes>; let loop: OpaquePointer
            init(_ c: Shared<Closes>, _ l: OpaquePointer) { closes = c; loop = l } }
        h.sync {
            for (timeout, rep) in [(UInt64(5), UInt64(5)), (UInt64(3_600_000), UInt64(0))] {
                var cbs = cs_timer_callbacks()
                cbs.on_fire = { _ in }
                cbs.on_close = { ctx in
                    let c = Unmanaged<Ctx>.fromOpaque(ctx!).takeRetainedValue()
                    var none = cs_timer_callbacks()
                    let late = cs_timer_start(c.loop, 1, 0, &none, nil)
                    let post = postJob(c.loop) {}
                    c.closes.update { $0.timers += 1; $0.lateTimerRefused = late == nil; $0.latePost = post }
                }
                let ctx = Unmanaged.passRetained(Ctx(closes, h.loop)).toOpaque()
                XCTAssertNotNil(cs_timer_start(h.loop, timeout, rep, &cbs, ctx))
            }
        }
        // Thread-pool work still running, a lookup, and a task queued at stop time.
        let workDone = Shared(0)
        let resolve = LoopTests.ResolveProbe()
        let taskRan = Shared(false)
        h.sync {
            let rc = cs_work_submit(h.loop, { _ in usleep(200_000) }, { ctx in
                Unmanaged<Shared<Int>>.fromOpaque(ctx!).takeRetainedValue().update { $0 += 1 }
            }, Unmanaged.passRetained(workDone).toOpaque())
            XCTAssertEqual(rc, 0)
            XCTAssertEqual(resolve.resolve(h.loop, "localhost", port: 80), 0)
        }
        h.post { usleep(50_000); taskRan.update { $0 = true } }

        h.stop()

        XCTAssertTrue(taskRan.value)
        XCTAssertEqual(workDone.value, 1)
        XCTAssertEqual(resolve.result.value.calls, 1)
        XCTAssertTrue([0, -ECANCELED].contains(resolve.result.value.status))
        XCTAssertEqual(listener.log.value.closes, 1)
        XCTAssertEqual(closes.value.timers, 2)
        XCTAssertTrue(closes.value.lateTimerRefused)
        XCTAssertEqual(closes.value.latePost, -ESHUTDOWN)
        XCTAssertEqual(outgoing.log.value.closes, [-ECANCELED])
        for p in accepted.value {
            XCTAssertEqual(p.log.value.closes, [-ECANCELED])
        }
        _ = blocking
    }

    /// A conn detached on one loop and adopted by another keeps its socket:
    /// the client's later bytes reach the second loop, its answer reaches the
    /// client, the first loop sees an ordinary close and never the socket again.
    /// Detaching refuses while bytes are queued.
    func testDetachAndAdoptOnAnotherLoop() throws {
        let first = try LoopHarness()
        let second = try LoopHarness()
        let handed = Shared<Int32?>(nil)
        let accepted = Shared([ConnProbe]())
        let (_, port) = startListener(first) { conn in
            let p = ConnProbe()
            p.onRead = { p, _ in
                if cs_conn_queued(p.conn) == 0 { handed.update { $0 = cs_conn_detach(p.conn) } }
            }
            p.bind(conn)
            XCTAssertEqual(cs_conn_read_start(conn), 0)
            accepted.update { $0.append(p) }
        }
        let client = try BlockingClient(port: port)
        XCTAssertTrue(client.send(Array("first".utf8)))
        XCTAssertTrue(handed.wait { $0 != nil })
        let fd = try XCTUnwrap(handed.value)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertTrue(accepted.value[0].log.wait { $0.closes == [0] }, "the first loop's conn closed as usual")

        let adopted = ConnProbe()
        adopted.onRead = { p, buf in
            let reply = Array("adopted:".utf8) + Array(buf)
            XCTAssertEqual(cs_conn_write(p.conn, reply, reply.count), 0)
        }
        second.sync {
            var out: OpaquePointer?
            XCTAssertEqual(cs_conn_adopt(second.loop, fd, &out), 0)
            adopted.bind(out!)
            XCTAssertEqual(cs_conn_read_start(out!), 0)
        }
        XCTAssertTrue(client.send(Array("second".utf8)))
        XCTAssertEqual(client.recv(exactly: 14), Array("adopted:second".utf8))
        XCTAssertEqual(accepted.value[0].log.value.received, Array("first".utf8), "nothing more reached the first loop")

        // Not while something is queued: writes to a client that is not reading
        // until the kernel's buffers are full and bytes wait in the queue.
        let refused = Shared<(queued: Int, status: Int32)?>(nil)
        second.sync {
            let chunk = patternBytes(1 << 20, seed: 7)
            for _ in 0..<256 where cs_conn_queued(adopted.conn) == 0 {
                XCTAssertEqual(cs_conn_write(adopted.conn, chunk, chunk.count), 0)
            }
            refused.update { $0 = (cs_conn_queued(adopted.conn), cs_conn_detach(adopted.conn)) }
        }
        XCTAssertGreaterThan(refused.value?.queued ?? 0, 0)
        XCTAssertEqual(refused.value?.status, -EBUSY)
        client.shutdownWrite()
        first.stop()
        second.stop()
    }
}
