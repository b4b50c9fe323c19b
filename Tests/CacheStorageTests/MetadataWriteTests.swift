import Foundation
import Glibc
import XCTest
@testable import CacheStorage

/// A queued metadata write names its data file; when that name has been
/// given to a new file meanwhile (the entry deleted, a new one stored under
/// its key), the write must not land on the new file: old ranges would
/// claim new bytes, and a crash before the new entry's own write would
/// serve them.
final class MetadataWriteTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "metadata-write-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder + "/tmp", withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func makeFile(_ path: String, _ bytes: [UInt8]) throws -> DataFile {
        let file = try DataFile(path: path)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(file.fd, $0.baseAddress, $0.count, 0) }, bytes.count)
        return file
    }

    private func write(_ metadata: ResourceMetadata, data: String, attribute: Bool,
                       identity: FileIdentity?) -> MetadataWrite.Outcome {
        let item = MetadataWrite(metadata: metadata, dataPath: data, metaPath: data + ".meta", attribute: attribute,
                                 identity: identity)
        return MetadataWrite.perform([item], root: folder, tempFolder: folder + "/tmp")[0]
    }

    func testAWriteForAReplacedFileLeavesTheNewFileAlone() throws {
        let data = folder + "/entry.data"
        let old = try makeFile(data, Array(repeating: 1, count: 100))
        let oldIdentity = try XCTUnwrap(old.identity)
        let metadata = ResourceMetadata(url: "http://127.0.0.1/a", totalLength: 100, ranges: RangeSet([0..<100]),
                                        lastAccess: 1)
        // The entry is deleted and a new one takes the name before the queued write runs.
        XCTAssertEqual(unlink(data), 0)
        let new = try makeFile(data, Array(repeating: 2, count: 10))
        XCTAssertNotEqual(new.identity, oldIdentity)

        for attribute in [true, false] {
            guard case .superseded = write(metadata, data: data, attribute: attribute, identity: oldIdentity) else {
                return XCTFail("a write for the old file landed (attribute: \(attribute))")
            }
            XCTAssertNil(MetadataAttribute.read(path: data), "the new file got the old metadata")
            XCTAssertFalse(FileManager.default.fileExists(atPath: data + ".meta"), "a .meta file claims the new file")
        }
        // The tmp folder holds no leftover.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder + "/tmp"), [])

        // Its own file's write lands, in both layouts; so does one whose file is unknown (older callers).
        for (attribute, identity) in [(true, new.identity), (false, new.identity), (true, nil)] {
            guard case .written = write(metadata, data: data, attribute: attribute, identity: identity) else {
                return XCTFail("the entry's own write did not land (attribute: \(attribute))")
            }
        }
        let stored = try XCTUnwrap(MetadataAttribute.read(path: data))
        XCTAssertEqual(ResourceMetadata(decoding: stored), metadata)
        XCTAssertEqual(FileManager.default.contents(atPath: data + ".meta").map { [UInt8]($0) }, Array(metadata.encoded().utf8))
    }
}
