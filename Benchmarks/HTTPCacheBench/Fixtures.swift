import CBenchSupport
import Foundation

/// The files every server serves: one big resource and many small ones,
/// each filled with its own pattern (see bs_pattern.c).
struct Fixtures {
    static let bigName = "big.bin"
    static let bigSeed: UInt64 = 1
    /// Scenario 11: the origin serves this file under every `/f/N`.
    static let entryPrefix = "/f/"
    static let entryName = "entry.bin"
    static let entrySeed: UInt64 = 7
    static let entrySize: UInt64 = 4096

    let root: String
    let bigSize: UInt64
    let smallSize: UInt64
    let smallCount: Int

    init(root: String, bigSize: UInt64, smallSize: UInt64, smallCount: Int) throws {
        self.root = root
        self.bigSize = bigSize
        self.smallSize = smallSize
        self.smallCount = smallCount
        try FileManager.default.createDirectory(atPath: root + "/small", withIntermediateDirectories: true)
        try write(Self.bigName, seed: Self.bigSeed, size: bigSize)
        try write(Self.entryName, seed: Self.entrySeed, size: Self.entrySize)
        for i in 0..<smallCount {
            try write(smallName(i), seed: smallSeed(i), size: smallSize)
        }
    }

    /// One entry of scenario 11 (any index: the same bytes under a distinct URL).
    static var entry: Target { Target(path: entryPrefix + "0", seed: entrySeed, size: entrySize) }

    func smallName(_ i: Int) -> String { "small/\(String(i + 1000).dropFirst()).bin" }
    func smallSeed(_ i: Int) -> UInt64 { 100 + UInt64(i) }

    func big(on server: Endpoint, query: String? = nil) -> Target {
        Target(path: server.path(Self.bigName, query), seed: Self.bigSeed, size: bigSize)
    }

    func smalls(on server: Endpoint) -> [Target] {
        (0..<smallCount).map { Target(path: server.path(smallName($0), nil), seed: smallSeed($0), size: smallSize) }
    }

    /// Scenarios 15–17: `count` distinct objects of `size` bytes under
    /// `folder/` (written on first use), each with its own pattern.
    func objects(_ folder: String, count: Int, size: UInt64, seedBase: UInt64) throws -> (Endpoint) -> [Target] {
        try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        let names = (0..<count).map { "\(folder)/\(String($0 + 10_000).dropFirst()).bin" }
        for (i, name) in names.enumerated() where !FileManager.default.fileExists(atPath: root + "/" + name) {
            try write(name, seed: seedBase + UInt64(i), size: size)
        }
        return { server in names.enumerated().map { Target(path: server.path($1, nil), seed: seedBase + UInt64($0), size: size) } }
    }

    private func write(_ name: String, seed: UInt64, size: UInt64) throws {
        let status = bs_pattern_write_file(root + "/" + name, seed, size)
        guard status == 0 else { throw BenchError("cannot write \(name): \(String(cString: strerror(-status)))") }
    }
}
