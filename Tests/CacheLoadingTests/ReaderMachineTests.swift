import CacheLoading
import XCTest

/// The reader as a value: events in, actions out, no loop or sockets.
final class ReaderMachineTests: XCTestCase {
    typealias Machine = ReaderMachine

    private func info(_ length: Int64?) -> ContentInfo {
        ContentInfo(totalLength: length, contentType: "video/mp4", etag: nil, lastModified: nil)
    }

    func testNothingHappensUntilTheConsumerAsks() {
        var machine = Machine(start: 0, length: nil)
        guard case .idle = machine.state else { return XCTFail() }
        XCTAssertEqual(machine.handle(.demand), [.openSource(from: 0, through: nil)])
        XCTAssertEqual(machine.handle(.demand), [], "one source")
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.publishInfo, .deliver(0..<1000)])
        XCTAssertEqual(machine.handle(.published(count: 600)), [])
        XCTAssertEqual(machine.position, 600)
        XCTAssertEqual(machine.handle(.sourceFinished), [.closeSource, .publishEnd])
        guard case .ended = machine.state else { return XCTFail("\(machine.state)") }
    }

    /// The range is planned as a proxy response's: a bounded range is a
    /// Range field, clamped to the resource.
    func testTheRangeIsPlannedLikeAResponse() {
        var machine = Machine(start: 1, length: 10)
        XCTAssertEqual(machine.handle(.demand), [.openSource(from: 1, through: 10)])
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.publishInfo, .deliver(1..<11)])
        XCTAssertEqual(machine.end, 11)
        var tail = Machine(start: 990, length: 100)
        _ = tail.handle(.demand)
        XCTAssertEqual(tail.handle(.headReady(info(1003))), [.publishInfo, .deliver(990..<1003)])
    }

    func testUnknownLengthStaysOpenEnded() {
        var machine = Machine(start: 33, length: nil)
        _ = machine.handle(.demand)
        XCTAssertEqual(machine.handle(.headReady(info(nil))), [.publishInfo, .deliver(33..<Int64.max)])
        var bounded = Machine(start: 33, length: 10)
        _ = bounded.handle(.demand)
        XCTAssertEqual(bounded.handle(.headReady(info(nil))), [.publishInfo, .deliver(33..<43)],
                       "a reader takes a range of a body of unknown length as asked")
    }

    func testAFailedSourceIsAFailureNotAnEnd() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand)
        _ = machine.handle(.headReady(info(1003)))
        XCTAssertEqual(machine.handle(.sourceFailed(.decryption("tail"))), [.closeSource, .publishFailure])
        XCTAssertEqual(machine.handle(.sourceFinished), [])
        guard case .failed = machine.state else { return XCTFail("\(machine.state)") }
    }

    func testSeekReopensTheSource() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand)
        _ = machine.handle(.headReady(info(1000)))
        XCTAssertEqual(machine.handle(.seek(500)), [.closeSource, .openSource(from: 500, through: 999)])
        XCTAssertEqual(machine.position, 500)
        // The head is known: a new source reports it at once; no second publishInfo.
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.deliver(500..<1000)])
    }

    func testSeekToTheEndEndsAndPastItFails() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand)
        _ = machine.handle(.headReady(info(1000)))
        XCTAssertEqual(machine.handle(.seek(1000)), [.closeSource, .publishEnd])
        XCTAssertEqual(machine.handle(.seek(1001)), [.publishFailure])
        guard case .failed(.range) = machine.state else { return XCTFail("\(machine.state)") }
        // A seek back inside recovers.
        XCTAssertEqual(machine.handle(.seek(10)), [.openSource(from: 10, through: 999)])
    }

    func testAnOffsetAtOrPastTheEnd() {
        var past = Machine(start: 2000, length: nil)
        _ = past.handle(.demand)
        XCTAssertEqual(past.handle(.headReady(info(1000))), [.publishInfo, .closeSource, .publishFailure])
        guard case .failed(.range) = past.state else { return XCTFail("\(past.state)") }
        var atEnd = Machine(start: 1000, length: nil)
        _ = atEnd.handle(.demand)
        XCTAssertEqual(atEnd.handle(.headReady(info(1000))), [.publishInfo, .closeSource, .publishEnd])
    }

    func testFailuresAndStop() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand)
        XCTAssertEqual(machine.handle(.headFailed(.load(.mismatch("bad")))), [.closeSource, .publishFailure])
        guard case .failed(.load) = machine.state else { return XCTFail("\(machine.state)") }
        XCTAssertEqual(machine.handle(.seek(0)), [.openSource(from: 0, through: nil)])
        XCTAssertEqual(machine.handle(.stop), [.closeSource])
        XCTAssertEqual(machine.handle(.seek(5)), [], "stopped is terminal")
        XCTAssertEqual(machine.handle(.demand), [])
    }

    func testAFailedKeyLookupStaysFailed() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand)
        let error = DecryptionSetupError(url: "http://x/a", reason: "no key")
        XCTAssertEqual(machine.handle(.headFailed(.decryption(error))), [.closeSource, .publishFailure])
        XCTAssertEqual(machine.handle(.seek(10)), [.publishFailure], "a seek cannot bring a key")
        guard case .failed(.decryption) = machine.state else { return XCTFail("\(machine.state)") }
    }
}
