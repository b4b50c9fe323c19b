// Reader throughput on cached data: the in-process reader (`MediaCache.openReader`,
// loop-side pread into its read-ahead window, copied out by the caller)
// against reading the same file directly with pread, plain and with AES-128-CTR
// decryption on the way out.
import CacheIO
import CacheLoading
import Foundation
import HTTPCache

/// A cache holding one resource (64 MiB; less with --quick) twice: plain and
/// as CTR ciphertext (the bytes are the same; only the decryption choice differs).
final class CachedReaderBench {
    let size: Int
    let directory: String
    let source: String
    let cache: MediaCache
    let plainURL = "http://bench.invalid/movie.bin"
    let encryptedURL = "http://bench.invalid/movie.ctr"

    init(size: Int) throws {
        self.size = size
        directory = NSTemporaryDirectory() + "httpcache-micro-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        source = directory + "/source.bin"
        var bytes = [UInt8](repeating: 0, count: size)
        for i in stride(from: 0, to: bytes.count, by: 4096) { bytes[i] = UInt8(truncatingIfNeeded: i >> 12) }
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory + "/cache")
        configuration.maxCacheSize = 1 << 30
        configuration.decryption = { url in
            url.hasSuffix(".ctr") ? .aes128CTR(key: Array(0..<16), iv: Array(repeating: 0xa5, count: 16)) : nil
        }
        cache = try MediaCache(configuration: configuration)
        for url in [plainURL, encryptedURL] {
            let copy = directory + "/import.bin"
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: source, toPath: copy)
            let operations = cache.operations  // the blocking form of importResource (this init is not async)
            try operations.wait { operations.importFile(copy, url: url, contentType: "video/mp4", $0) }.get()
        }
    }

    deinit {
        cache.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Reads the whole resource through a new reader in 1 MiB reads.
    func readThroughCache(_ url: String, buffer: UnsafeMutableRawBufferPointer) {
        do {
            let reader = try cache.openReader(url: url)
            defer { reader.close() }
            var total = 0
            while case let n = try reader.read(into: buffer, timeout: 30), n > 0 { total += n }
            precondition(total == size, "read \(total) bytes")
            sink &+= total
        } catch {
            fatalError("reader: \(error)")
        }
    }

    /// Reads the source file with pread in 1 MiB reads (the page cache holds it, as it does the cached copy).
    func readDirectly(buffer: UnsafeMutableRawBufferPointer) {
        let fd = open(source, O_RDONLY)
        precondition(fd >= 0)
        defer { close(fd) }
        var offset = 0
        while case let n = pread(fd, buffer.baseAddress, buffer.count, off_t(offset)), n > 0 { offset += n }
        sink &+= offset
    }
}

func readerBenchmarks(seconds: Double, quick: Bool) -> [MicroResult] {
    let bench: CachedReaderBench
    do { bench = try CachedReaderBench(size: quick ? 8 << 20 : 64 << 20) } catch { fatalError("reader benchmark setup: \(error)") }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
    defer { buffer.deallocate() }
    let size = bench.size
    return [
        measure("read cached \(size >> 20) MiB: pread the file directly", seconds: seconds, batch: 1, bytesPerCall: size) {
            bench.readDirectly(buffer: buffer)
        },
        measure("read cached \(size >> 20) MiB: in-process reader", seconds: seconds, batch: 1, bytesPerCall: size) {
            bench.readThroughCache(bench.plainURL, buffer: buffer)
        },
        measure("read cached \(size >> 20) MiB: reader + AES-128-CTR", seconds: seconds, batch: 1, bytesPerCall: size) {
            bench.readThroughCache(bench.encryptedURL, buffer: buffer)
        },
    ]
}

/// The decryption transform as the serving path uses it: 64 KiB pieces at
/// unaligned boundaries (a partial block is carried to the next piece).
func measureTransform(_ name: String, kind: CipherKind, seconds: Double) -> MicroResult {
    let total = 64 << 20
    let piece = (64 << 10) + 5
    let input = [UInt8](repeating: 0x5a, count: total)
    var output: [UInt8] = []
    output.reserveCapacity(piece + 16)
    let spec = DecryptionSpec(kind: kind, key: Array(0..<16), iv: Array(repeating: 0xa5, count: 16))
    return measure(name, seconds: seconds, batch: 1, bytesPerCall: total) {
        do {
            let transform = try DecryptTransform(spec)
            try input.withUnsafeBytes { bytes in
                var at = 0
                while at < total {
                    let end = min(total, at + piece)
                    output.removeAll(keepingCapacity: true)
                    try transform.process(UnsafeRawBufferPointer(rebasing: bytes[at..<end]), at: Int64(at), into: &output)
                    sink &+= output.count
                    at = end
                }
            }
            try transform.finish(into: &output)
        } catch {
            fatalError("\(name): \(error)")
        }
    }
}
