import CacheHTTP
import CacheIO
import CacheLoading
@testable import CacheProxy
import CacheStorage
import Foundation
import XCTest

final class ExchangeStateMachineTests: XCTestCase {
    typealias Machine = ExchangeStateMachine
    private var file: DataFile!
    private var path = ""

    override func setUpWithError() throws {
        path = NSTemporaryDirectory() + "exchange-sm-\(UInt64.random(in: 0...UInt64.max))"
        file = try DataFile(path: path)
    }

    override func tearDown() {
        file = nil
        unlink(path)
    }

    private func info(_ length: Int64?) -> ContentInfo {
        ContentInfo(totalLength: length, contentType: "video/mp4", etag: "\"v1\"", lastModified: nil)
    }

    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// A compact picture of actions for table-like assertions.
    private func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .deliver(let range): return "deliver \(range.lowerBound)..<\(range.upperBound)"
            case .write(let bytes):
                let t = text(bytes)
                return t.hasPrefix("HTTP/1.1 ") ? "head " + String(t.prefix(12).dropFirst(9)) : "write \(t.debugDescription)"
            case .sendFile(_, let range, let head): return "file \(range.lowerBound)..<\(range.upperBound)\(head == nil ? "" : " +head")"
            case .respondError(let error): return "error \(error)"
            case .finish(let keepAlive): return "finish \(keepAlive)"
            case .abort: return "abort"
            }
        }
    }

    func testWholeBodyIsZeroCopyWithTheHeadInTheFirstPiece() {
        var machine = Machine(request: BodyRequest(), transform: nil)
        XCTAssertEqual(describe(machine.contentReady(info(100), date: "d")), ["deliver 0..<100"])
        XCTAssertEqual(describe(machine.filePiece(file, 0..<60)), ["file 0..<60 +head"])
        XCTAssertEqual(describe(machine.filePiece(file, 60..<100)), ["file 60..<100"])
        XCTAssertEqual(describe(machine.bodyFinished(date: "d")), ["finish true"])
    }

    /// A head built with the stored-response lines rendered before (what a
    /// copy of a plain hit does) is byte for byte the head built whole.
    func testPrerenderedMiddleMakesTheSameHead() {
        var stored = HTTPHeaders()
        stored.add("Date", "Wed, 25 Nov 2026 10:00:00 GMT")
        stored.add("Cache-Control", "max-age=60")
        stored.add("X-Origin", "a")
        stored.add("Content-Length", "100")
        var plain = ContentInfo(totalLength: 100, contentType: nil, etag: nil,
                                lastModified: "Tue, 24 Nov 2026 10:00:00 GMT", headers: stored)
        var replayed = plain
        replayed.replayedLines = ResponsePlan.replayedLines(stored)
        replayed.age = 7
        plain.contentType = "video/mp4"
        let requests = [BodyRequest(), BodyRequest(range: .closed(first: 10, last: 19)),
                        BodyRequest(range: .closed(first: 200, last: 300)), BodyRequest(isHead: true),
                        BodyRequest(isHTTP10: true, keepAlive: false)]
        for stored in [info(100), info(nil), plain, replayed] {
            for request in requests {
                let plan = ResponsePlan(request, info: stored)
                let whole = text(plan.head(stored, date: "d"))
                XCTAssertEqual(text(plan.head(stored, date: "d", middle: ResponsePlan.middleLines(stored))), whole)
                var machine = Machine(request: request, transform: nil)
                let actions = machine.contentReady(stored, date: "d", middle: ResponsePlan.middleLines(stored))
                    + machine.filePiece(file, plan.body.lowerBound..<min(plan.body.upperBound, 100))
                let heads = actions.compactMap { action -> String? in
                    switch action {
                    case .write(let bytes): return text(bytes)
                    case .sendFile(_, _, let head?): return text(head)
                    default: return nil
                    }
                }
                XCTAssertEqual(heads.first, whole, "\(request)")
            }
        }
    }

    func testRangeIsPlannedAs206() {
        var machine = Machine(request: BodyRequest(range: .closed(first: 10, last: 19)), transform: nil)
        XCTAssertEqual(describe(machine.contentReady(info(100), date: "d")), ["deliver 10..<20"])
        guard case .sendFile(_, _, let head?) = machine.filePiece(file, 10..<20).first else { return XCTFail() }
        let t = text(head)
        XCTAssertTrue(t.hasPrefix("HTTP/1.1 206"))
        XCTAssertTrue(t.contains("Content-Range: bytes 10-19/100\r\n"))
        XCTAssertTrue(t.contains("Content-Length: 10\r\n"))
    }

    func testHeadAnd416AreAnsweredWithTheHeadOnly() {
        var head = Machine(request: BodyRequest(isHead: true), transform: nil)
        XCTAssertEqual(describe(head.contentReady(info(100), date: "d")), ["head 200", "finish true"])
        var unsatisfiable = Machine(request: BodyRequest(range: .from(first: 500)), transform: nil)
        XCTAssertEqual(describe(unsatisfiable.contentReady(info(100), date: "d")), ["head 416", "finish true"])
    }

    func testIfRangeMismatchGivesTheWholeBody() {
        var machine = Machine(request: BodyRequest(range: .closed(first: 0, last: 9), ifRange: "\"v0\""), transform: nil)
        XCTAssertEqual(describe(machine.contentReady(info(100), date: "d")), ["deliver 0..<100"])
    }

    func testUnknownLengthIsChunkedForHTTP11AndCloseDelimitedFor10() {
        var machine = Machine(request: BodyRequest(), transform: nil)
        XCTAssertEqual(describe(machine.contentReady(info(nil), date: "d")), ["deliver 0..<\(Int64.max)"])
        XCTAssertEqual(describe(machine.filePiece(file, 0..<26)),
                       ["head 200", "write \"1a\\r\\n\"", "file 0..<26", "write \"\\r\\n\""])
        XCTAssertEqual(describe(machine.bodyFinished(date: "d")), ["write \"0\\r\\n\\r\\n\"", "finish true"])

        var old = Machine(request: BodyRequest(isHTTP10: true), transform: nil)
        _ = old.contentReady(info(nil), date: "d")
        XCTAssertEqual(describe(old.filePiece(file, 0..<26)), ["file 0..<26 +head"])
        XCTAssertEqual(describe(old.bodyFinished(date: "d")), ["finish false"], "the body ends with the connection")
    }

    func testFailureBeforeTheFirstByteIsACleanErrorResponse() {
        var machine = Machine(request: BodyRequest(), transform: nil)
        _ = machine.contentReady(info(100), date: "d")
        XCTAssertEqual(describe(machine.failed(.mismatch("x"))), ["error x", "finish true"])
    }

    func testFailureMidBodyAborts() {
        var machine = Machine(request: BodyRequest(), transform: nil)
        _ = machine.contentReady(info(100), date: "d")
        _ = machine.filePiece(file, 0..<10)
        XCTAssertEqual(describe(machine.failed(.mismatch("x"))), ["abort"])
        XCTAssertEqual(describe(machine.bodyFinished(date: "d")), [], "nothing after an abort")
    }

    func testOriginErrorBeforeContent() {
        var machine = Machine(request: BodyRequest(keepAlive: false), transform: nil)
        XCTAssertEqual(describe(machine.contentFailed(.mismatch("bad"))), ["error bad", "finish false"])
    }

    /// A mapping transform over 16-byte blocks: the input is widened to whole
    /// blocks and the output cut back to the asked bytes.
    func testMappingTransformWidensAndCuts() {
        let transform = XORBlocks()
        var machine = Machine(request: BodyRequest(range: .closed(first: 5, last: 20)), transform: transform)
        XCTAssertEqual(describe(machine.contentReady(info(100), date: "d")), ["deliver 0..<32"])
        let input = [UInt8](repeating: 0x0F, count: 32)
        let actions = input.withUnsafeBytes { machine.bytes($0, at: 0) }
        XCTAssertEqual(actions.count, 2)
        guard case .write(let head) = actions[0], case .write(let body) = actions[1] else { return XCTFail() }
        XCTAssertTrue(text(head).contains("Content-Range: bytes 5-20/100\r\n"))
        XCTAssertEqual(body, [UInt8](repeating: 0xF0, count: 16))
        XCTAssertEqual(describe(machine.bodyFinished(date: "d")), ["finish true"])
    }

    /// A buffering transform: the head carries the output's length, and the
    /// client's range applies to the output.
    func testBufferingTransformAnswersWithTheOutput() {
        let transform = Doubling()
        var machine = Machine(request: BodyRequest(range: .from(first: 2)), transform: transform)
        XCTAssertEqual(describe(machine.contentReady(info(3), date: "d")), ["deliver 0..<3"])
        XCTAssertEqual(describe(Array("abc".utf8).withUnsafeBytes { machine.bytes($0, at: 0) }), [])
        let done = machine.bodyFinished(date: "d")
        guard case .write(let bytes) = done.first else { return XCTFail() }
        let t = text(bytes)
        XCTAssertTrue(t.contains("Content-Range: bytes 2-5/6\r\n"), t)
        XCTAssertTrue(t.hasSuffix("\r\n\r\nbbcc"), t)
        XCTAssertTrue(t.contains("Content-Type: text/plain\r\n"))
        XCTAssertEqual(describe(Array(done.dropFirst())), ["finish true"])
    }

    func testClientPreconditionsAreAnsweredWithoutABody() {
        let info = ContentInfo(totalLength: 100, contentType: "video/mp4", etag: "\"v1\"", lastModified: nil,
                               headers: HTTPHeaders([("Cache-Control", "max-age=60"), ("Content-Encoding", "gzip")]))
        func answer(_ fields: [(String, String)]) -> String? {
            var request = BodyRequest()
            request.preconditions = HTTPHeaders(fields)
            var machine = ExchangeStateMachine(request: request, transform: nil)
            let actions = machine.contentReady(info, date: "D")
            guard case .write(let bytes)? = actions.first else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
        let notModified = answer([("If-None-Match", "W/\"v1\"")]) ?? ""
        XCTAssertTrue(notModified.hasPrefix("HTTP/1.1 304 "), notModified)
        XCTAssertTrue(notModified.contains("ETag: \"v1\"\r\n"))
        XCTAssertTrue(notModified.contains("Cache-Control: max-age=60\r\n"))
        XCTAssertFalse(notModified.contains("Content-Length"), "no length of a body a 304 does not have")
        XCTAssertFalse(notModified.contains("Content-Encoding"))
        XCTAssertTrue(answer([("If-Match", "\"v2\"")])?.hasPrefix("HTTP/1.1 412 ") ?? false)
        // A mismatch plans the normal response: the machine asks for the body.
        var request = BodyRequest()
        request.preconditions = HTTPHeaders([("If-None-Match", "\"v2\"")])
        var machine = ExchangeStateMachine(request: request, transform: nil)
        guard case .deliver(let range)? = machine.contentReady(info, date: "D").first else {
            return XCTFail("expected a body")
        }
        XCTAssertEqual(range, 0..<100)
    }
}

/// Flips every bit, a block at a time (stands in for a block cipher).
private final class XORBlocks: BodyTransform {
    var buffersWhole: Bool { false }
    func outputInfo(_ stored: ContentInfo) -> ContentInfo { stored }
    func inputRange(forOutput range: Range<Int64>, totalLength: Int64?) -> Range<Int64> {
        let lower = range.lowerBound / 16 * 16
        let upper = min((range.upperBound + 15) / 16 * 16, totalLength ?? Int64.max)
        return lower..<upper
    }
    func process(_ input: UnsafeRawBufferPointer, at offset: Int64, into output: inout [UInt8]) throws(TransformError) {
        output.append(contentsOf: input.map { $0 ^ 0xFF })
    }
    func finish(into output: inout [UInt8]) throws(TransformError) {}
}

/// Writes every byte twice, and only at the end.
private final class Doubling: BodyTransform {
    private var seen: [UInt8] = []
    var buffersWhole: Bool { true }
    func outputInfo(_ stored: ContentInfo) -> ContentInfo {
        var info = stored
        info.contentType = "text/plain"
        return info
    }
    func inputRange(forOutput range: Range<Int64>, totalLength: Int64?) -> Range<Int64> { range }
    func process(_ input: UnsafeRawBufferPointer, at offset: Int64, into output: inout [UInt8]) throws(TransformError) {
        seen.append(contentsOf: input)
    }
    func finish(into output: inout [UInt8]) throws(TransformError) {
        for byte in seen { output.append(byte); output.append(byte) }
    }
}

/// The proxy's body stage with decryption: pieces at any offsets, output cut to the asked range.
final class ExchangeDecryptionTests: XCTestCase {
    func testUnalignedPiecesComeOutAsTheAskedPlaintext() throws {
        let spec = DecryptionSpec(kind: .aes128CTR, key: Array(0..<16), iv: Array(repeating: 0xfe, count: 16))
        let ciphertext = (0..<1003).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let plaintext = try BlockDecryptor(spec).decrypt(ciphertext, atOffset: 0)
        for (first, last) in [(1, 10), (0, 1002), (17, 17), (990, 1002), (500, 777)] {
            var machine = ExchangeStateMachine(request: BodyRequest(range: .closed(first: Int64(first), last: Int64(last))),
                                               transform: try DecryptTransform(spec))
            let info = ContentInfo(totalLength: 1003, contentType: "video/mp4", etag: nil, lastModified: nil)
            guard case .deliver(let input)? = machine.contentReady(info, date: "d").first else { return XCTFail() }
            XCTAssertEqual(input.lowerBound % 16, 0)
            var body: [UInt8] = []
            var head = ""
            func collect(_ actions: [ExchangeStateMachine.Action]) {
                for case .write(let bytes) in actions {
                    let text = String(decoding: bytes, as: UTF8.self)
                    if text.hasPrefix("HTTP/1.1") { head = text } else { body += bytes }
                }
            }
            // Pieces of 5 bytes: never block-aligned after the first.
            var at = Int(input.lowerBound)
            while at < Int(input.upperBound) {
                let end = min(at + 5, Int(input.upperBound))
                collect(ciphertext[at..<end].withUnsafeBytes { machine.bytes($0, at: Int64(at)) })
                at = end
            }
            collect(machine.bodyFinished(date: "d"))
            XCTAssertEqual(body, Array(plaintext[first...last]), "\(first)-\(last)")
            XCTAssertTrue(head.contains("Content-Range: bytes \(first)-\(last)/1003\r\n"), head)
            XCTAssertTrue(head.contains("Content-Length: \(last - first + 1)\r\n"), head)
        }
    }
}
