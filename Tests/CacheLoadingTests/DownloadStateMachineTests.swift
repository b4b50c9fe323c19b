import CacheHTTP
@testable import CacheLoading
import XCTest

/// Bytes a stored resource keeps (known length, no limit in the way).
private let kept = DownloadStateMachine.Keeping(isTransient: false, totalLength: 1 << 40, maxBytes: .max)

final class DownloadStateMachineTests: XCTestCase {
    typealias Machine = DownloadStateMachine

    private func head(_ status: Int, _ fields: [(String, String)]) -> HTTPResponseHead {
        HTTPResponseHead(version: .http11, status: status, reason: "", headers: HTTPHeaders(fields))
    }

    private func failureText(_ machine: Machine) -> String { machine.failure.map { "\($0)" } ?? "none" }

    func testRangeAsAskedStoresEveryByteThenCompletes() {
        var machine = Machine(request: .range(100..<200), knownTotal: 1000)
        XCTAssertTrue(machine.isReady, "a range is awaitable before its head")
        let actions = machine.head(head(206, [("Content-Range", "bytes 100-199/1000")]), known: nil)
        XCTAssertEqual(actions, [.adopt(totalLength: 1000), .wakeReaders])
        XCTAssertEqual(machine.body(count: 60, keeping: kept), .store(count: 60, at: 100))
        XCTAssertEqual(machine.body(count: 60, keeping: kept), .store(count: 40, at: 160), "nothing past the end")
        XCTAssertTrue(machine.hasStoredAll)
        XCTAssertFalse(machine.shouldStopEarly, "the response ends there: let it complete")
        XCTAssertEqual(machine.responseEnded(error: nil, errorHead: nil, errorBody: []), .completed)
        XCTAssertTrue(machine.isFinished)
        XCTAssertNil(machine.failure)
    }

    func testAWrongContentRangeStoresNothing() {
        var machine = Machine(request: .range(100..<200), knownTotal: 1000)
        let actions = machine.head(head(206, [("Content-Range", "bytes 101-200/1000")]), known: nil)
        XCTAssertEqual(actions, [.stopTask, .finish])
        XCTAssertTrue(failureText(machine).contains("asked bytes=100-199"), failureText(machine))
        XCTAssertEqual(machine.body(count: 10, keeping: kept), .ignore)
    }

    func testA200ForARangeIsTheWholeResourceFromZero() {
        var machine = Machine(request: .range(500..<Int64.max), knownTotal: nil)
        XCTAssertEqual(machine.head(head(200, [("Content-Length", "800")]), known: nil),
                       [.adopt(totalLength: 800), .wakeReaders])
        XCTAssertEqual(machine.position, 0)
        XCTAssertEqual(machine.end, 800)
    }

    func testAProbeLearnsTheLengthFromA416() {
        var machine = Machine(request: .probe(.from(first: 5000)))
        XCTAssertFalse(machine.isReady)
        let actions = machine.head(head(416, [("Content-Range", "bytes */1000")]), known: nil)
        XCTAssertEqual(actions, [.adopt(totalLength: 1000), .stopTask, .finish])
        XCTAssertNil(machine.failure)
    }

    func testValidationConfirmsOrDetectsAChange() {
        let known = Machine.Known(totalLength: 1000, etag: "\"a\"", lastModified: nil)
        var same = Machine(request: .validation)
        XCTAssertEqual(same.head(head(206, [("Content-Range", "bytes 0-0/1000"), ("ETag", "\"a\"")]), known: known),
                       [.confirmed, .stopTask, .finish])
        var changed = Machine(request: .validation)
        XCTAssertEqual(changed.head(head(206, [("Content-Range", "bytes 0-0/1000"), ("ETag", "\"b\"")]), known: known),
                       [.versionChanged("ETag \"a\" → \"b\""), .stopTask, .finish])
        guard case .changed? = changed.failure else { return XCTFail("expected .changed") }
        var longer = Machine(request: .range(0..<10), knownTotal: 1000)
        XCTAssertEqual(longer.head(head(206, [("Content-Range", "bytes 0-9/2000")]), known: known).first,
                       .versionChanged("length 1000 → 2000"))
    }

    func testAValidationAnsweredWithAnotherStatusReplacesTheStoredOne() {
        // A stored 404 (no validators), the same length: only the status tells it changed.
        let stored404 = Machine.Known(totalLength: 10, etag: nil, lastModified: nil, status: 404)
        for answer in [head(206, [("Content-Range", "bytes 0-0/10")]), head(200, [("Content-Length", "10")])] {
            var machine = Machine(request: .validation)
            XCTAssertEqual(machine.head(answer, known: stored404, storesAnyStatus: true),
                           [.versionChanged("status 404 → \(answer.status)"), .stopTask, .finish])
            guard case .changed? = machine.failure else { return XCTFail("expected .changed") }
        }
        // The stored status again is compared like a 200.
        var same = Machine(request: .validation)
        XCTAssertEqual(same.head(head(404, [("Content-Length", "10")]), known: stored404, storesStatus: true,
                                 storesAnyStatus: true), [.confirmed, .stopTask, .finish])
        // A stored 200 answered with a 404: replaced in the forward and reverse
        // modes; relayed, the 200 kept, for proxy URLs (which store 200s only).
        let stored200 = Machine.Known(totalLength: 10, etag: nil, lastModified: nil)
        var replaced = Machine(request: .validation)
        XCTAssertEqual(replaced.head(head(404, []), known: stored200, storesAnyStatus: true).first,
                       .versionChanged("status 200 → 404"))
        var relayed = Machine(request: .validation)
        XCTAssertEqual(relayed.head(head(404, []), known: stored200, storesAnyStatus: false), [.collectErrorBody])
        // A 5xx never replaces: the stored response may stand in (stale-if-error).
        var failed = Machine(request: .validation)
        XCTAssertEqual(failed.head(head(503, []), known: stored404, storesAnyStatus: true), [.collectErrorBody])
    }

    func testA304ToARevalidationKeepsTheBytesAndLetsTheExchangeComplete() {
        let known = Machine.Known(totalLength: 1000, etag: "\"a\"", lastModified: nil)
        var validation = Machine(request: .validation)
        // No .stopTask: a 304 has no body, its connection goes back to the pool.
        XCTAssertEqual(validation.head(head(304, [("ETag", "\"a\"")]), known: known), [.notModified, .finish])
        XCTAssertTrue(validation.isFinished)
        XCTAssertNil(validation.failure)
        XCTAssertNil(validation.responseEnded(error: nil, errorHead: nil, errorBody: []), "nothing more happens")
        // A 304 to anything but a revalidation of a known resource is the origin's answer to relay.
        var probe = Machine(request: .probe(.from(first: 0)))
        XCTAssertEqual(probe.head(head(304, []), known: nil), [.collectErrorBody])
        var unknown = Machine(request: .validation)
        XCTAssertEqual(unknown.head(head(304, []), known: nil), [.collectErrorBody])
    }

    func testAnErrorStatusKeepsABoundedBodyForTheClient() {
        var machine = Machine(request: .probe(.from(first: 0)))
        let error = head(404, [("Content-Type", "text/plain")])
        XCTAssertEqual(machine.head(error, known: nil), [.collectErrorBody])
        XCTAssertEqual(machine.body(count: 40 << 10, keeping: kept), .collect(count: 40 << 10))
        XCTAssertEqual(machine.body(count: 40 << 10, keeping: kept), .collect(count: 24 << 10))
        XCTAssertEqual(machine.body(count: 10, keeping: kept), .ignore)
        guard case .failed(.originStatus(let status, _, let body)) = machine.responseEnded(error: nil, errorHead: error, errorBody: [1, 2]) else {
            return XCTFail("expected the origin's status")
        }
        XCTAssertEqual(status, 404)
        XCTAssertEqual(body, [1, 2])
    }

    func testABodyOfUnknownLengthLearnsItAtTheEnd() {
        var machine = Machine(request: .probe(.from(first: 0)))
        _ = machine.head(head(200, [("Transfer-Encoding", "chunked")]), known: nil)
        XCTAssertEqual(machine.body(count: 700, keeping: kept), .store(count: 700, at: 0))
        XCTAssertEqual(machine.responseEnded(error: nil, errorHead: nil, errorBody: []), .completedWithLength(700))
    }

    func testAnOriginClosingMidBodyFails() {
        var machine = Machine(request: .range(0..<100), knownTotal: 100)
        _ = machine.head(head(206, [("Content-Range", "bytes 0-99/100")]), known: nil)
        _ = machine.body(count: 30, keeping: kept)
        guard case .failed(.upstream(let error))? = machine.responseEnded(error: nil, errorHead: nil, errorBody: []) else {
            return XCTFail("expected a failure")
        }
        XCTAssertTrue("\(error)".contains("body ended at 30, expected 100"))
    }

    func testAnotherDownloadTakingOverStopsThisOneEarly() {
        var machine = Machine(request: .range(0..<1000), knownTotal: 1000)
        _ = machine.head(head(206, [("Content-Range", "bytes 0-999/1000")]), known: nil)
        _ = machine.body(count: 100, keeping: kept)
        machine.truncate(at: 400)
        XCTAssertEqual(machine.end, 400)
        XCTAssertEqual(machine.body(count: 500, keeping: kept), .store(count: 300, at: 100))
        XCTAssertTrue(machine.shouldStopEarly)
        XCTAssertFalse(machine.hasStoredAll)
        machine.truncate(at: 50)  // behind the position: no effect
        XCTAssertEqual(machine.end, 400)
    }

    /// Two failures are equal only when they are the same failure.
    func testFinishedStatesCompareTheirFailures() {
        var stopped = Machine(request: .range(0..<10), knownTotal: 10)
        _ = stopped.stop(.mismatch("a wrong Content-Range"))
        var changed = Machine(request: .range(0..<10), knownTotal: 10)
        _ = changed.stop(.changed("ETag"))
        XCTAssertNotEqual(stopped.state, changed.state)
        XCTAssertEqual(stopped.state, .finished(.mismatch("a wrong Content-Range")))
        XCTAssertNotEqual(Machine.Ending.failed(.storage("disk")), .failed(.notCached("stale")))
    }

    func testStopIsOnceAndFinal() {
        var machine = Machine(request: .range(0..<10), knownTotal: 10)
        XCTAssertTrue(machine.stop(nil))
        XCTAssertFalse(machine.stop(.mismatch("again")))
        XCTAssertNil(machine.failure)
        XCTAssertEqual(machine.head(head(206, [("Content-Range", "bytes 0-9/10")]), known: nil), [])
        XCTAssertNil(machine.responseEnded(error: nil, errorHead: nil, errorBody: []))
    }

    func testRangeHeaders() {
        XCTAssertEqual(Machine(request: .range(10..<20)).rangeHeader(knownTotal: nil), "bytes=10-19")
        XCTAssertEqual(Machine(request: .range(10..<Int64.max)).rangeHeader(knownTotal: nil), "bytes=10-")
        XCTAssertEqual(Machine(request: .range(10..<20)).rangeHeader(knownTotal: 20), "bytes=10-")
        XCTAssertEqual(Machine(request: .probe(.suffix(length: 5))).rangeHeader(knownTotal: nil), "bytes=-5")
        XCTAssertEqual(Machine(request: .validation).rangeHeader(knownTotal: nil), "bytes=0-0")
    }

    /// Forward and reverse modes store any final status the cache may
    /// (RFC 9111 §3): its whole body, like a 200's; otherwise, and never for
    /// a validation or a gap, it stays an error relayed to the client.
    func testAStorableStatusIsKeptWholeOnlyWhenTheDriverSaysSo() {
        var stored = Machine(request: .probe(.closed(first: 0, last: 9)))
        XCTAssertEqual(stored.head(head(404, [("Content-Length", "5")]), known: nil, storesStatus: true),
                       [.adopt(totalLength: 5), .wakeReaders])
        XCTAssertEqual(stored.body(count: 5, keeping: kept), .store(count: 5, at: 0))
        XCTAssertEqual(stored.responseEnded(error: nil, errorHead: nil, errorBody: []), .completed)

        var empty = Machine(request: .probe(.from(first: 0)))
        XCTAssertEqual(empty.head(head(204, [("Content-Length", "9")]), known: nil, storesStatus: true),
                       [.adopt(totalLength: 0), .wakeReaders], "a 204 has no body whatever it says")
        XCTAssertTrue(empty.hasStoredAll)

        var relayed = Machine(request: .probe(.from(first: 0)))
        XCTAssertEqual(relayed.head(head(404, [("Content-Length", "5")]), known: nil), [.collectErrorBody])
        // A validation answered with the stored status compares it like a 200.
        let known301 = Machine.Known(totalLength: 5, etag: nil, lastModified: nil, status: 301)
        var validation = Machine(request: .validation)
        XCTAssertEqual(validation.head(head(301, [("Content-Length", "5")]), known: known301, storesStatus: true),
                       [.confirmed, .stopTask, .finish])
        var changed = Machine(request: .validation)
        XCTAssertEqual(changed.head(head(404, [("Content-Length", "7")]),
                                    known: Machine.Known(totalLength: 5, etag: nil, lastModified: nil, status: 404),
                                    storesStatus: true),
                       [.versionChanged("length 5 → 7"), .stopTask, .finish])
        var other = Machine(request: .validation)
        XCTAssertEqual(other.head(head(301, []), known: known301), [.collectErrorBody], "not storable now")
        var gap = Machine(request: .range(10..<20), knownTotal: 100)
        XCTAssertEqual(gap.head(head(404, []), known: nil, storesStatus: true), [.collectErrorBody])
        var notModified = Machine(request: .probe(.from(first: 0)))
        XCTAssertEqual(notModified.head(head(304, []), known: nil, storesStatus: true), [.collectErrorBody])
    }

    /// Where each body byte goes is the machine's decision: stored; not kept
    /// once a body of unknown length passes the limit or the resource is not
    /// kept (then every later byte passes through); a storage fault passes
    /// through, another write error fails the download.
    func testWhereTheBytesGo() {
        var unknown = Machine(request: .probe(.from(first: 0)))
        _ = unknown.head(head(200, []), known: nil)
        let open = DownloadStateMachine.Keeping(isTransient: false, totalLength: nil, maxBytes: 1000)
        XCTAssertEqual(unknown.body(count: 600, keeping: open), .store(count: 600, at: 0))
        XCTAssertEqual(unknown.body(count: 600, keeping: open), .stopKeeping(count: 600, at: 600, tooLarge: true))
        XCTAssertTrue(unknown.isPassingThrough)
        XCTAssertEqual(unknown.body(count: 10, keeping: open), .pass(count: 10, at: 1200), "for good")

        var transient = Machine(request: .range(0..<100))
        _ = transient.head(head(206, [("Content-Range", "bytes 0-99/100")]), known: .init(totalLength: 100, etag: nil, lastModified: nil))
        let notKept = DownloadStateMachine.Keeping(isTransient: true, totalLength: 100, maxBytes: .max)
        XCTAssertEqual(transient.body(count: 40, keeping: notKept), .stopKeeping(count: 40, at: 0, tooLarge: false))

        var faulty = Machine(request: .range(0..<100))
        _ = faulty.head(head(206, [("Content-Range", "bytes 0-99/100")]), known: .init(totalLength: 100, etag: nil, lastModified: nil))
        XCTAssertEqual(faulty.body(count: 40, keeping: kept), .store(count: 40, at: 0))
        XCTAssertEqual(faulty.storeFailed(isFault: true, "no space"), .passThrough)
        XCTAssertEqual(faulty.body(count: 60, keeping: kept), .pass(count: 60, at: 40))

        var broken = Machine(request: .range(0..<100))
        _ = broken.head(head(206, [("Content-Range", "bytes 0-99/100")]), known: .init(totalLength: 100, etag: nil, lastModified: nil))
        _ = broken.body(count: 40, keeping: kept)
        XCTAssertEqual(broken.storeFailed(isFault: false, "bad descriptor"), .fail(.storage("bad descriptor")))
        XCTAssertTrue(broken.isFinished)
    }
}
