import Foundation
@testable import HTTPCacheC
import XCTest

/// hc_reader_* and hc_set_decryption called from Swift, in the debug build:
/// what needs no origin (arguments, positions, the registry, codes).
/// examples/c/reader.c, cancel.c, decrypt.c and ffmpeg_host.c read real bytes.
final class ReaderHandleTests: XCTestCase {
    private let folder = CacheFolder("reader")

    override func tearDown() { folder.remove() }

    private func openCache() throws -> OpaquePointer { try folder.open() }

    /// hc_reader_info writes through a raw pointer bound to HCContentInfo:
    /// its fields must sit where hc_content_info's do on LP64.
    func testContentInfoHasTheHeadersLayout() {
        XCTAssertEqual(MemoryLayout<HCContentInfo>.offset(of: \.totalLength), 0)
        XCTAssertEqual(MemoryLayout<HCContentInfo>.offset(of: \.contentType), 8)
        XCTAssertEqual(MemoryLayout<HCContentInfo>.offset(of: \.byteRanges), 16)
        XCTAssertLessThanOrEqual(MemoryLayout<HCContentInfo>.size, 24, "sizeof(hc_content_info)")
    }

    func testOpenRefusesBadArgumentsWithoutIO() throws {
        let cache = try openCache()
        defer { hc_close(cache) }
        var reader: OpaquePointer? = OpaquePointer(bitPattern: 1)
        XCTAssertEqual(hc_reader_open(cache, "file:///etc/passwd", 0, -1, &reader), -1)
        XCTAssertNil(reader, "*out is NULL on failure")
        XCTAssertEqual(hc_reader_open(cache, "http://127.0.0.1:9/a", -1, -1, &reader), -1)
        XCTAssertEqual(hc_reader_open(cache, "http://127.0.0.1:9/a", 0, -2, &reader), -1)
        XCTAssertEqual(hc_reader_open(nil, "http://127.0.0.1:9/a", 0, -1, &reader), -1)
        XCTAssertEqual(hc_reader_open(cache, nil, 0, -1, &reader), -1)
        XCTAssertEqual(CacheHandle.from(cache)?.dependents.count, 0)
        XCTAssertEqual(hc_reader_seek(nil, 0), -1)
        XCTAssertEqual(hc_reader_read(nil, nil, 0, 0), -1)
        hc_reader_cancel(nil)
        hc_reader_close(nil)
    }

    /// Positions count from the opened offset: 0 ... length, nothing else.
    func testSeekPositionsAreRelativeToTheOpenedOffset() throws {
        let cache = try openCache()
        defer { hc_close(cache) }
        var reader: OpaquePointer?
        // Port 9 (discard): nothing is asked of it, seeks do no I/O. (Whether the
        // resource reaches the range's end is the origin's to say: reads there
        // are reader.c's, with a real origin.)
        XCTAssertEqual(hc_reader_open(cache, "http://127.0.0.1:9/a.mp4", 1000, 50, &reader), 0)
        let handle = try XCTUnwrap(ReaderHandle.from(reader))
        XCTAssertEqual(hc_reader_seek(reader, 0), 0)
        XCTAssertEqual(handle.reader.position, 1000)
        XCTAssertEqual(hc_reader_seek(reader, 50), 0, "the range's end")
        XCTAssertEqual(handle.reader.position, 1050)
        XCTAssertEqual(hc_reader_seek(reader, 51), -10, "HC_ERANGE")
        XCTAssertEqual(hc_reader_seek(reader, -1), -10)
        XCTAssertEqual(hc_reader_seek(reader, Int64.max), -10, "no overflow")
        XCTAssertEqual(handle.reader.position, 1050, "a refused seek moves nothing")
        hc_reader_close(reader)
    }

    /// A reader is in the cache's Dependents while open; hc_close ends its
    /// calls with HC_ECLOSED and hc_reader_close still frees it afterwards.
    func testReaderIsADependentOfItsCache() throws {
        let cache = try openCache()
        let dependents = try XCTUnwrap(CacheHandle.from(cache)?.dependents)
        var first: OpaquePointer?, second: OpaquePointer?
        XCTAssertEqual(hc_reader_open(cache, "http://127.0.0.1:9/a", 0, -1, &first), 0)
        XCTAssertEqual(hc_reader_open(cache, "http://127.0.0.1:9/b", 0, -1, &second), 0)
        XCTAssertEqual(dependents.count, 2)
        hc_reader_close(first)
        XCTAssertEqual(dependents.count, 1)
        hc_close(cache)
        var byte: UInt8 = 0
        XCTAssertEqual(hc_reader_read(second, &byte, 1, -1), -11, "HC_ECLOSED")
        XCTAssertEqual(hc_reader_seek(second, 0), -11)
        hc_reader_close(second)
    }

    func testCancelIsSticky() throws {
        let cache = try openCache()
        defer { hc_close(cache) }
        var reader: OpaquePointer?
        XCTAssertEqual(hc_reader_open(cache, "http://127.0.0.1:9/a", 0, -1, &reader), 0)
        hc_reader_cancel(reader)
        var byte: UInt8 = 0
        XCTAssertEqual(hc_reader_read(reader, &byte, 1, -1), -7, "HC_ECANCELED")
        var info = [UInt8](repeating: 0, count: 24)
        XCTAssertEqual(hc_reader_info(reader, &info, -1), -7)
        XCTAssertEqual(hc_reader_read(reader, &byte, 1, 0), -7)
        hc_reader_close(reader)
    }

    func testSetDecryptionNeedsACache() throws {
        XCTAssertEqual(hc_set_decryption(nil, nil, nil), -1)
        let cache = try openCache()
        defer { hc_close(cache) }
        XCTAssertEqual(hc_set_decryption(cache, { _, _, _, _ in 0 }, nil), 0)
        XCTAssertEqual(hc_set_decryption(cache, nil, nil), 0)
    }
}
