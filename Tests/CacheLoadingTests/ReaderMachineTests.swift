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
        XCTAssertEqual(machine.handle(.demand(space: 100)), [.chooseDecryption])
        XCTAssertEqual(machine.handle(.decryptionChosen(.success(1))), [.openSource(from: 0, through: nil)])
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.publishInfo, .deliver(0..<1000), .pull])
    }

    func testCopiesAreBoundedByTheConsumersRoom() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand(space: 100))
        _ = machine.handle(.decryptionChosen(.success(1)))
        _ = machine.handle(.headReady(info(1000)))
        XCTAssertEqual(machine.handle(.file(0..<600)), [.copy(0..<100)])
        // Full: nothing until the consumer frees room.
        XCTAssertEqual(machine.handle(.published(count: 100, space: 0)), [])
        XCTAssertEqual(machine.position, 100)
        XCTAssertEqual(machine.handle(.demand(space: 1000)), [.copy(100..<600)])
        XCTAssertEqual(machine.handle(.published(count: 500, space: 500)), [.pull])
        XCTAssertEqual(machine.handle(.pending), [])
        XCTAssertEqual(machine.handle(.canContinue), [.pull])
        XCTAssertEqual(machine.handle(.sourceFinished), [.flush])
        XCTAssertEqual(machine.handle(.flushed), [.closeSource, .publishEnd])
        guard case .ended = machine.state else { return XCTFail("\(machine.state)") }
    }

    func testAFailedFlushIsAFailureNotAnEnd() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand(space: 100))
        _ = machine.handle(.decryptionChosen(.success(16)))
        _ = machine.handle(.headReady(info(1003)))
        XCTAssertEqual(machine.handle(.sourceFinished), [.flush])
        XCTAssertEqual(machine.handle(.sourceFailed(.decryption("tail"))), [.closeSource, .publishFailure])
        XCTAssertEqual(machine.handle(.flushed), [])
        guard case .failed = machine.state else { return XCTFail("\(machine.state)") }
    }

    func testDecryptionWidensToWholeBlocks() {
        // Bytes 1-10 of a 1000-byte resource: the source reads block 0-15.
        var machine = Machine(start: 1, length: 10)
        _ = machine.handle(.demand(space: 1 << 20))
        XCTAssertEqual(machine.handle(.decryptionChosen(.success(16))), [.openSource(from: 0, through: 15)])
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.publishInfo, .deliver(0..<16), .pull])
        XCTAssertEqual(machine.end, 11)
    }

    func testTheLastBlockIsClampedToTheLength() {
        var machine = Machine(start: 990, length: nil)
        _ = machine.handle(.demand(space: 1 << 20))
        XCTAssertEqual(machine.handle(.decryptionChosen(.success(16))), [.openSource(from: 976, through: nil)])
        XCTAssertEqual(machine.handle(.headReady(info(1003))), [.publishInfo, .deliver(976..<1003), .pull])
    }

    func testUnknownLengthStaysOpenEnded() {
        var machine = Machine(start: 33, length: nil)
        _ = machine.handle(.demand(space: 10))
        _ = machine.handle(.decryptionChosen(.success(16)))
        XCTAssertEqual(machine.handle(.headReady(info(nil))), [.publishInfo, .deliver(32..<Int64.max), .pull])
    }

    func testSeekReopensTheSourceAndDropsTheOldPiece() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand(space: 100))
        _ = machine.handle(.decryptionChosen(.success(16)))
        _ = machine.handle(.headReady(info(1000)))
        _ = machine.handle(.file(0..<600))
        XCTAssertEqual(machine.handle(.seek(500)), [.closeSource, .openSource(from: 496, through: 999)])
        XCTAssertEqual(machine.position, 500)
        // The head is known: a new source reports it at once; no second publishInfo.
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.deliver(496..<1000), .pull])
    }

    func testSeekToTheEndEndsAndPastItFails() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand(space: 100))
        _ = machine.handle(.decryptionChosen(.success(1)))
        _ = machine.handle(.headReady(info(1000)))
        XCTAssertEqual(machine.handle(.seek(1000)), [.closeSource, .publishEnd])
        XCTAssertEqual(machine.handle(.seek(1001)), [.publishFailure])
        guard case .failed(.range) = machine.state else { return XCTFail("\(machine.state)") }
        // A seek back inside recovers.
        XCTAssertEqual(machine.handle(.seek(10)), [.openSource(from: 10, through: 999)])
    }

    func testAnOffsetPastTheEndIsARangeFailure() {
        var machine = Machine(start: 2000, length: nil)
        _ = machine.handle(.demand(space: 100))
        _ = machine.handle(.decryptionChosen(.success(1)))
        XCTAssertEqual(machine.handle(.headReady(info(1000))), [.publishInfo, .closeSource, .publishFailure])
        guard case .failed(.range) = machine.state else { return XCTFail("\(machine.state)") }
    }

    func testFailuresAndStop() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand(space: 100))
        _ = machine.handle(.decryptionChosen(.success(1)))
        XCTAssertEqual(machine.handle(.headFailed(.mismatch("bad"))), [.closeSource, .publishFailure])
        guard case .failed(.load) = machine.state else { return XCTFail("\(machine.state)") }
        XCTAssertEqual(machine.handle(.seek(0)), [.openSource(from: 0, through: nil)])
        XCTAssertEqual(machine.handle(.stop), [.closeSource])
        XCTAssertEqual(machine.handle(.seek(5)), [], "stopped is terminal")
        XCTAssertEqual(machine.handle(.demand(space: 5)), [])
    }

    func testAFailedKeyLookupStaysFailed() {
        var machine = Machine(start: 0, length: nil)
        _ = machine.handle(.demand(space: 100))
        let error = DecryptionSetupError(url: "http://x/a", reason: "no key")
        XCTAssertEqual(machine.handle(.decryptionChosen(.failure(error))), [.publishFailure])
        XCTAssertEqual(machine.handle(.seek(10)), [.publishFailure], "a seek cannot bring a key")
        guard case .failed(.decryption) = machine.state else { return XCTFail("\(machine.state)") }
    }
}
