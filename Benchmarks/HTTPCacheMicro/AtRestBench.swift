import CacheIO
import CacheStorage
import Foundation

/// Encryption at rest (issue #24): a data file written in 64 KiB pieces and
/// read in 256 KiB pieces (what a download and a hit do), plain and
/// AES-256-XTS, from the page cache.
func atRestBenchmarks(seconds: Double, quick: Bool) -> [MicroResult] {
    let size = quick ? 8 << 20 : 64 << 20
    let folder = NSTemporaryDirectory() + "httpcache-micro-atrest-\(getpid())"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let plain: DataFile
    let encrypted: DataFile
    do {
        plain = try DataFile(path: folder + "/plain")
        // Two different AES-256 keys (XTS refuses equal halves).
        encrypted = try DataFile(path: folder + "/encrypted", cipher: UnitCipher(key: Array(0..<64), fileID: 7))
    } catch {
        fatalError("at-rest benchmark setup: \(error)")
    }
    let piece = [UInt8](repeating: 0x5a, count: 64 << 10)
    func write(_ file: DataFile) {
        piece.withUnsafeBytes { bytes in
            for offset in stride(from: 0, to: size, by: piece.count) {
                do { try file.write(bytes, at: Int64(offset)) } catch { fatalError("write: \(error)") }
            }
        }
    }
    let readPiece = 256 << 10
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: DataFile.readCapacity(readPiece), alignment: 64)
    defer { scratch.deallocate() }
    func read(_ file: DataFile) {
        for offset in stride(from: 0, to: size, by: readPiece) {
            guard let bytes = file.read(Int64(offset)..<Int64(offset + readPiece), into: scratch) else { fatalError("read") }
            sink &+= Int(bytes[bytes.count - 1])
        }
    }
    return [
        measure("write data file (64 KiB): plain", seconds: seconds, batch: 1, bytesPerCall: size) { write(plain) },
        measure("write data file (64 KiB): AES-256-XTS", seconds: seconds, batch: 1, bytesPerCall: size) {
            write(encrypted)
        },
        measure("read data file (256 KiB): plain", seconds: seconds, batch: 1, bytesPerCall: size) { read(plain) },
        measure("read data file (256 KiB): AES-256-XTS", seconds: seconds, batch: 1, bytesPerCall: size) {
            read(encrypted)
        },
    ]
}
