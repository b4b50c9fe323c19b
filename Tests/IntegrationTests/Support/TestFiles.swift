import Foundation
import XCTest

/// A file of deterministic pseudo-random bytes, kept in memory for comparisons.
struct TestFile: Sendable {
    let url: URL
    let bytes: [UInt8]
    let seed: UInt64

    var path: String { url.path }
    var size: Int { bytes.count }
    /// Last path component, e.g. for building an origin URL: "\(origin.baseURL)/\(file.name)".
    var name: String { url.lastPathComponent }

    /// Generates `size` bytes from `seed` (splitmix64) and writes them to
    /// `directory/name` in one write. Same seed and size → same bytes.
    static func random(size: Int, seed: UInt64 = 1, in directory: URL, name: String? = nil) throws -> TestFile {
        let bytes = randomBytes(count: size, seed: seed)
        let url = directory.appendingPathComponent(name ?? "random-\(size)-\(seed).bin")
        try Data(bytes).write(to: url)
        // World-readable, in case nginx workers run as another user.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
        return TestFile(url: url, bytes: bytes, seed: seed)
    }

    /// Wraps an existing file (reads it fully).
    static func existing(at url: URL) throws -> TestFile {
        TestFile(url: url, bytes: [UInt8](try Data(contentsOf: url)), seed: 0)
    }

    /// `count` pseudo-random bytes from `seed` (splitmix64, 8 bytes per step).
    static func randomBytes(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var i = 0
            while i < count {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                var word = z.littleEndian
                let n = Swift.min(8, count - i)
                withUnsafeBytes(of: &word) { raw in
                    for k in 0..<n { buffer[i + k] = raw[k] }
                }
                i += n
            }
            initialized = count
        }
    }

    /// Bytes of `range` (clamped to the file).
    func slice(_ range: Range<Int>) -> [UInt8] {
        let lower = Swift.max(0, Swift.min(range.lowerBound, size))
        let upper = Swift.max(lower, Swift.min(range.upperBound, size))
        return Array(bytes[lower..<upper])
    }

    func slice(_ range: ClosedRange<Int>) -> [UInt8] {
        slice(range.lowerBound..<(range.upperBound + 1))
    }

    /// True when `data` equals the file's bytes starting at `offset`.
    func matches<C: Collection>(_ data: C, at offset: Int) -> Bool where C.Element == UInt8 {
        guard offset >= 0, offset + data.count <= size else { return false }
        return firstMismatch(data, at: offset) == nil
    }

    /// Index into `data` of the first byte that differs from the file at
    /// `offset + index`, or nil when all match (bytes past the end of the
    /// file count as mismatches).
    func firstMismatch<C: Collection>(_ data: C, at offset: Int) -> Int? where C.Element == UInt8 {
        // Fast path (debug builds compare byte by byte very slowly): one memcmp.
        if offset >= 0, offset + data.count <= size,
           let equal = data.withContiguousStorageIfAvailable({ actual in
               bytes.withUnsafeBufferPointer { expected in
                   actual.count == 0 || memcmp(actual.baseAddress!, expected.baseAddress! + offset, actual.count) == 0
               }
           }), equal {
            return nil
        }
        var index = 0
        for byte in data {
            let pos = offset + index
            if pos < 0 || pos >= size || bytes[pos] != byte { return index }
            index += 1
        }
        return nil
    }
}

/// Asserts `actual` equals `file`'s bytes in `range` with a short message
/// (first mismatch) instead of dumping megabytes.
func XCTAssertBytes<C: Collection>(_ actual: C, equal file: TestFile, range: Range<Int>? = nil,
                                   _ message: @autoclosure () -> String = "",
                                   file testFile: StaticString = #filePath, line: UInt = #line) where C.Element == UInt8 {
    let range = range ?? 0..<file.size
    let prefix = message().isEmpty ? "" : message() + ": "
    if actual.count != range.count {
        XCTFail("\(prefix)length \(actual.count) != expected \(range.count) (range \(range) of \(file.name))",
                file: testFile, line: line)
        return
    }
    if let idx = file.firstMismatch(actual, at: range.lowerBound) {
        XCTFail("\(prefix)first mismatch at body byte \(idx) (file offset \(range.lowerBound + idx)) of \(file.name)",
                file: testFile, line: line)
    }
}

func XCTAssertBytes<C: Collection>(_ actual: C, equal file: TestFile, range: ClosedRange<Int>,
                                   _ message: @autoclosure () -> String = "",
                                   file testFile: StaticString = #filePath, line: UInt = #line) where C.Element == UInt8 {
    XCTAssertBytes(actual, equal: file, range: range.lowerBound..<(range.upperBound + 1), message(),
                   file: testFile, line: line)
}
