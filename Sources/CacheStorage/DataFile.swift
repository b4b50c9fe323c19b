import CacheIO
import Glibc

/// The sparse data file of one resource, bytes at their real offsets. The descriptor is closed on
/// deinit (responses keep the object while its sendfile ranges are queued); positional I/O, so
/// sharing across threads (fdatasync on the pool) is safe.
///
/// Encrypted, it holds AES-256-XTS units (never sent with sendfile): a read decrypts the units it
/// touches; a partial unit write decrypts the unit on disk, merges and writes it back (XTS enciphers
/// each 16-byte block alone, so a torn write never spoils claimed bytes). Encrypted reads and writes
/// run on one thread at a time (the loop).
package final class DataFile: @unchecked Sendable {
    package let fd: Int32
    /// Read at open: a later metadata write checks the entry's name still leads here.
    let identity: FileIdentity?
    let sizeWhenOpened: Int64  // its size when it was opened (0 when unknown), read with its identity
    /// Set once, before the first read or write (a spare gets its cipher when adopted).
    package private(set) var cipher: UnitCipher?

    package convenience init(path: String, cipher: UnitCipher? = nil) throws(StorageError) {
        try self.init(path, O_CREAT, cipher)
    }

    /// Opens an existing file, never creating one (on the pool ahead of use: one removed stays so).
    package convenience init(existing path: String, cipher: UnitCipher? = nil) throws(StorageError) {
        try self.init(path, 0, cipher)
    }

    private init(_ path: String, _ create: Int32, _ cipher: UnitCipher?) throws(StorageError) {
        let fd = open(path, O_RDWR | create | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw StorageError("open \(path): \(FileIO.errorText(code))", code: code)
        }
        self.fd = fd
        self.cipher = cipher
        var info = stat()
        let known = fstat(fd, &info) == 0
        identity = known ? FileIdentity(info) : nil
        sizeWhenOpened = known ? Int64(info.st_size) : 0
    }

    deinit { close(fd) }

    /// Gives a file made ahead of need (a spare) the cipher of the entry it became.
    func use(_ cipher: UnitCipher?) { self.cipher = cipher }
    /// Whether bytes on disk are ciphertext: reads must go through `read`, never sendfile.
    package var isEncrypted: Bool { cipher != nil }
    /// The scratch a `read` of `count` bytes needs (room to widen to whole units).
    package static func readCapacity(_ count: Int) -> Int { count + 2 * UnitCipher.unitSize }

    /// The plaintext of `range`, read into `scratch` (`readCapacity(range.count)` bytes or more);
    /// nil when the file is shorter or a read or the cipher fails.
    package func read(_ range: Range<Int64>, into scratch: UnsafeMutableRawBufferPointer) -> UnsafeRawBufferPointer? {
        let count = Int(range.count)
        guard let cipher else {
            guard Self.readFully(fd, UnsafeMutableRawBufferPointer(rebasing: scratch[0..<count]), at: range.lowerBound) == count
            else { return nil }
            return UnsafeRawBufferPointer(rebasing: scratch[0..<count])
        }
        guard let start = cipher.read(fd, range, into: scratch) else { return nil }
        return UnsafeRawBufferPointer(rebasing: scratch[start..<(start + count)])
    }

    /// The plaintext of `range` in a new array (small reads: sniffing, playlists).
    package func read(_ range: Range<Int64>) -> [UInt8]? {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readCapacity(Int(range.count)), alignment: 16)
        defer { scratch.deallocate() }
        return read(range, into: scratch).map { Array($0) }
    }

    /// Bytes read at `offset` until `buffer` is full or the file ends; -1 on failure.
    static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return -1 }
            if n == 0 { break }
            done += n
        }
        return done
    }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        if let cipher { return try writeEncrypted(bytes, at: offset, cipher) }
        try Self.writeFully(fd, bytes, at: offset)
    }

    static func writeFully(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        if let code = FileIO.writeAll(fd, bytes, at: offset) {
            throw StorageError("write: \(FileIO.errorText(code))", code: code)
        }
    }

    /// Most plaintext enciphered per pass of a write (the scratch stays small).
    static let writePiece = 64 << 10

    private func writeEncrypted(_ bytes: UnsafeRawBufferPointer, at offset: Int64, _ cipher: UnitCipher) throws(StorageError) {
        let unit = Int64(UnitCipher.unitSize)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.writePiece + 2 * UnitCipher.unitSize, alignment: 16)
        defer { scratch.deallocate() }
        var position = offset
        let end = offset + Int64(bytes.count)
        while position < end {
            let start = position / unit * unit
            let pieceEnd = min(end, start + Int64(Self.writePiece))
            let alignedEnd = (pieceEnd + unit - 1) / unit * unit
            let whole = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<Int(alignedEnd - start)])
            // Units the write covers in part keep their other bytes: read and decrypted first.
            if position > start { try loadUnit(at: start, into: whole, from: 0, cipher) }
            if pieceEnd < alignedEnd && (alignedEnd - unit > start || position == start) {
                try loadUnit(at: alignedEnd - unit, into: whole, from: Int(alignedEnd - unit - start), cipher)
            }
            let source = UnsafeRawBufferPointer(rebasing: bytes[Int(position - offset)..<Int(pieceEnd - offset)])
            UnsafeMutableRawBufferPointer(rebasing: whole[Int(position - start)...]).copyMemory(from: source)
            guard cipher.encrypt(whole, firstUnit: start / unit) else { throw StorageError("encryption of a data unit failed") }
            try Self.writeFully(fd, UnsafeRawBufferPointer(whole), at: start)
            position = pieceEnd
        }
    }

    /// Unit at `offset` decrypted into `whole[from..<from + unit]` (zeros past the file's end).
    private func loadUnit(at offset: Int64, into whole: UnsafeMutableRawBufferPointer, from: Int,
                          _ cipher: UnitCipher) throws(StorageError) {
        let slot = UnsafeMutableRawBufferPointer(rebasing: whole[from..<(from + UnitCipher.unitSize)])
        let n = Self.readFully(fd, slot, at: offset)
        guard n >= 0 else { throw StorageError("read: \(FileIO.errorText(errno))", code: errno) }
        if n < slot.count { slot.baseAddress!.advanced(by: n).initializeMemory(as: UInt8.self, repeating: 0, count: slot.count - n) }
        guard cipher.decrypt(slot, firstUnit: offset / Int64(UnitCipher.unitSize)) else {
            throw StorageError("decryption of a data unit failed")
        }
    }

    /// Makes written bytes durable (blocking: pool thread only).
    package func sync() -> Bool { fdatasync(fd) == 0 }
}

package struct StorageError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package let code: Int32?  // the errno behind it, when a system call failed
    package init(_ description: String, code: Int32? = nil) {
        self.description = description
        self.code = code
    }

    package var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }

    /// The folder cannot take writes (full, deleted, read-only, failing): bytes pass through instead.
    package var isStorageFault: Bool {
        guard let code else { return false }
        return [ENOSPC, EDQUOT, ENOENT, ENOTDIR, EACCES, EPERM, EROFS, EIO].contains(code)
    }
}

/// Which file a descriptor or name leads to (a name may go to a new file meanwhile).
struct FileIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) { (device, inode) = (UInt64(info.st_dev), UInt64(info.st_ino)) }

    init?(fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        self.init(info)
    }

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }
}
