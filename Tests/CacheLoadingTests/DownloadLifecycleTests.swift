import CacheIO
@testable import CacheLoading
import CacheStorage
import XCTest

/// A download's life as a value: events in, actions out, no sockets; its
/// record on disk; the holders of a shared resource's pin.
final class DownloadLifecycleTests: XCTestCase {
    private func fresh(_ state: DownloadRecord.State = .queued) -> DownloadLifecycle {
        var record = DownloadRecord(id: "a1", name: "Film", url: "http://o.test/film.mp4", created: 1)
        record.state = state == .running ? .queued : state
        var machine = DownloadLifecycle(record)
        if state == .running { _ = machine.handle(.start) }  // a record read as running is queued (see below)
        return machine
    }

    private func progress(done: Int64, known: Int64?, sized: Int, total: Int, walkDone: Bool = false) -> DownloadProgress {
        var p = DownloadProgress()
        p.bytesDone = done
        p.bytesKnown = known
        p.resourcesSized = sized
        p.counts.resourcesTotal = total
        p.walkDone = walkDone
        return p
    }

    func testTransitionsAndTheirActions() {
        // (start state, event, end state, actions)
        let big: Int64 = 1 << 40
        let failure = HTTPCacheError(.upstream, "origin answered 503")
        let table: [(DownloadRecord.State, DownloadLifecycle.Event, DownloadRecord.State, [DownloadLifecycle.Action])] = [
            (.queued, .start, .running, [.fetch, .persist, .announce]),
            (.queued, .pause, .paused, [.persist, .announce]),
            (.queued, .remove, .removed, [.release, .forget, .announce]),
            (.running, .progress(progress(done: 10, known: 100, sized: 1, total: 1), room: big), .running, [.announce]),
            (.running, .ended(nil), .completed, [.persist, .announce]),
            (.running, .ended(failure), .failed, [.persist, .announce]),
            (.running, .pause, .paused, [.stopFetching, .persist, .announce]),
            (.running, .remove, .removed, [.stopFetching, .release, .forget, .announce]),
            (.running, .interrupted, .queued, [.stopFetching, .persist]),
            (.paused, .resume, .queued, [.persist, .announce]),
            (.failed, .resume, .queued, [.persist, .announce]),
            (.paused, .remove, .removed, [.release, .forget, .announce]),
            (.completed, .remove, .removed, [.release, .forget, .announce]),
            // Late reports of stopped fetches and requests that change nothing.
            (.paused, .ended(nil), .paused, []),
            (.paused, .progress(progress(done: 1, known: nil, sized: 0, total: 1), room: big), .paused, []),
            (.completed, .resume, .completed, []),
            (.completed, .pause, .completed, []),
            (.running, .resume, .running, []),
            (.removed, .resume, .removed, []),
            (.removed, .remove, .removed, []),
        ]
        for (start, event, end, actions) in table {
            var machine = fresh(start)
            let got = machine.handle(event)
            XCTAssertEqual(machine.state, end, "\(start) + \(event)")
            XCTAssertEqual(got, actions, "\(start) + \(event)")
        }
    }

    func testARunningDownloadReadFromTheFolderIsQueuedToGoOn() {
        var record = DownloadRecord(id: "r", name: "r", url: "http://o.test/f", created: 0)
        record.state = .running
        XCTAssertEqual(DownloadLifecycle(record).state, .queued)
        XCTAssertEqual(fresh(.paused).state, .paused)
        XCTAssertEqual(fresh(.completed).state, .completed)
    }

    func testWhatCannotFitInTheRoomLeftFailsTooLargeAndLetsGoOfItsResources() {
        var machine = fresh(.running)
        // 1 resource of 2,000,000 bytes + its entry's 4 KiB fits in 2,004,096 and not in one byte less.
        XCTAssertEqual(machine.handle(.progress(progress(done: 5, known: 2_000_000, sized: 1, total: 1), room: 2_004_096)), [.announce])
        let actions = machine.handle(.progress(progress(done: 6, known: 2_000_000, sized: 1, total: 1), room: 2_004_095))
        XCTAssertEqual(actions, [.stopFetching, .release, .persist, .announce])
        XCTAssertEqual(machine.state, .failed)
        XCTAssertEqual(machine.record.failure?.code, .tooLarge)
        // Never "completed" afterwards, whatever the stopped preload says.
        XCTAssertEqual(machine.handle(.ended(nil)), [])
        XCTAssertEqual(machine.state, .failed)
    }

    func testTheTotalIsAnEstimateUntilEverySizeIsKnown() {
        var machine = fresh(.running)
        // 2 of 10 resources sized (1000 bytes): about 5000.
        _ = machine.handle(.progress(progress(done: 500, known: 1000, sized: 2, total: 10), room: 1 << 40))
        XCTAssertEqual(machine.record.bytesTotal, 5000)
        XCTAssertTrue(machine.record.totalIsEstimate)
        _ = machine.handle(.progress(progress(done: 900, known: 4321, sized: 10, total: 10, walkDone: true), room: 1 << 40))
        XCTAssertEqual(machine.record.bytesTotal, 4321)
        XCTAssertFalse(machine.record.totalIsEstimate)
        _ = machine.handle(.ended(nil))
        XCTAssertEqual(machine.record.bytesTotal, 900)
        XCTAssertEqual(machine.state, .completed)
    }

    func testAnHLSTotalIsBandwidthTimesDurationUntilExact() {
        var machine = fresh(.running)
        var p = progress(done: 0, known: nil, sized: 0, total: 3)
        p.counts.estimatedBytes = 1_500_000
        _ = machine.handle(.progress(p, room: 1 << 40))
        XCTAssertEqual(machine.record.bytesTotal, 1_500_000)
        XCTAssertTrue(machine.record.totalIsEstimate)
        // Known sizes beyond the estimate raise it; all known (and the walk over) make it exact.
        p.bytesKnown = 1_600_000
        p.resourcesSized = 2
        _ = machine.handle(.progress(p, room: 1 << 40))
        XCTAssertEqual(machine.record.bytesTotal, 1_600_000)
        p.bytesKnown = 1_400_000
        p.resourcesSized = 3
        p.walkDone = true
        _ = machine.handle(.progress(p, room: 1 << 40))
        XCTAssertEqual(machine.record.bytesTotal, 1_400_000)
        XCTAssertFalse(machine.record.totalIsEstimate)
    }

    func testARestartedRunCountsFromZeroAndClearsTheFailure() {
        var machine = fresh(.running)
        _ = machine.handle(.progress(progress(done: 77, known: 100, sized: 1, total: 1), room: 1 << 40))
        _ = machine.handle(.ended(HTTPCacheError(.timedOut, "read")))
        _ = machine.handle(.resume)
        XCTAssertNil(machine.record.failure)
        _ = machine.handle(.start)
        XCTAssertEqual(machine.record.bytesDone, 0)
        XCTAssertEqual(machine.state, .running)
    }

    func testRecordsRoundTripThroughTheFolder() throws {
        let root = FileManagerFreeTemp.make()
        defer { FileManagerFreeTemp.remove(root) }
        let folder = DownloadFolder(cacheDirectory: root)
        var record = DownloadRecord(id: "b2", name: "A name\nwith a break", url: "https://o.test/m.m3u8?x=1", variant: "highest",
                                    duration: 30.5, range: nil, created: 42)
        record.state = .failed
        record.failure = HTTPCacheError(.tooLarge, "needs 5 bytes")
        record.bytesDone = 12
        record.bytesTotal = 99
        record.totalIsEstimate = true
        record.resourcesDone = 3
        record.resourcesTotal = 7
        record.segmentsDone = 2
        record.segmentsTotal = 5
        try folder.save(record)
        var other = DownloadRecord(id: "c3", name: "x", url: "http://o.test/f", range: "0-99", created: 43)
        other.state = .paused
        try folder.save(other)
        var expected = record
        expected.name = "A name with a break"
        XCTAssertEqual(folder.load(), [expected, other])
        folder.delete("b2")
        XCTAssertEqual(folder.load().map(\.id), ["c3"])
        // A half-written file (a crash before the rename) is not a record.
        XCTAssertNil(DownloadFolder.decode("id x\nurl http://o.test/f\n"))
    }

    func testSelectionsAreChecked() {
        var record = DownloadRecord(id: "d", name: "d", url: "ftp://o.test/f", created: 0)
        XCTAssertNotNil(record.problem)
        record.url = "http://o.test/f"
        XCTAssertNil(record.problem)
        record.range = "9-1"
        XCTAssertNotNil(record.problem)
        record.range = "0-9"
        record.variant = "best"
        XCTAssertNotNil(record.problem)
        record.variant = "lowest"
        record.duration = -1
        XCTAssertNotNil(record.problem)
        record.duration = 10
        XCTAssertNil(record.problem)
        XCTAssertEqual(record.preloadRequest?.range, 0..<10)
        XCTAssertEqual(record.preloadRequest?.holder, "download:d")
        XCTAssertEqual(DownloadRecord.defaultName(for: "https://o.test/a/film.mp4?t=1"), "film.mp4")
    }

    func testAResourceHeldByTwoStaysUntilBothLetGo() {
        var pin = PinHolders.adding("download:a", to: nil)
        pin = PinHolders.adding("download:b", to: pin)
        XCTAssertEqual(PinHolders.adding("download:a", to: pin), "download:a download:b")
        XCTAssertTrue(PinHolders.contains("download:b", in: pin))
        XCTAssertEqual(PinHolders.removing("download:a", from: pin), "download:b")
        XCTAssertNil(PinHolders.removing("download:b", from: "download:b"))
        XCTAssertFalse(PinHolders.contains("download:a", in: "download:ab"))
    }
}

/// A temporary folder without Foundation's FileManager.
enum FileManagerFreeTemp {
    static func make() -> String {
        var template = Array("/tmp/hc-downloads-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        return path
    }

    static func remove(_ path: String) {
        FileIO.removeTree(path)
    }
}
