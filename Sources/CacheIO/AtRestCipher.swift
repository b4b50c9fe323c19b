// An encrypted folder's ciphers (which key does what: CacheStorage/FolderKeys.swift), OpenSSL
// EVP behind cs_atrest.
import CSupport

/// AES-256-XTS over `unitSize`-byte units of one data file, in place. Its OpenSSL contexts
/// take one thread at a time (a data file is used on its loop; an export makes its own).
package final class UnitCipher: @unchecked Sendable {
    /// The data unit: reads widen to it, partial writes rewrite whole units.
    package static let unitSize = Int(CS_XTS_UNIT)

    package let fileID: UInt64  // tells this file's units from every other file's
    /// A socket's loop decrypts with it through a context of its own while this object lives.
    package let raw: OpaquePointer

    /// `key`: 64 bytes (two distinct AES-256 keys); nil when OpenSSL refuses.
    package init?(key: [UInt8], fileID: UInt64) {
        guard key.count == 64, let raw = key.withUnsafeBufferPointer({ cs_xts_new($0.baseAddress) }) else { return nil }
        self.raw = raw
        self.fileID = fileID
    }

    deinit { cs_xts_free(raw) }

    /// Whole units; `firstUnit` is the unit number of the buffer's start.
    package func encrypt(_ buffer: UnsafeMutableRawBufferPointer, firstUnit: Int64) -> Bool {
        run(encrypt: true, buffer, firstUnit: firstUnit)
    }

    package func decrypt(_ buffer: UnsafeMutableRawBufferPointer, firstUnit: Int64) -> Bool {
        run(encrypt: false, buffer, firstUnit: firstUnit)
    }

    /// Plaintext `range` of `fd` into `buffer` (widened to whole units: `range.count + 2 *
    /// unitSize` bytes at least); returns where the range starts in it, nil when the file is
    /// short or a read or the cipher fails. The sockets' sends use the same C function.
    package func read(_ fd: Int32, _ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        precondition(buffer.count >= range.count + 2 * Self.unitSize, "scratch too small for the widened read")
        var start = 0
        let status = cs_xts_read(raw, nil, fd, fileID, range.lowerBound, range.upperBound,
                                 buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &start)
        return status == 0 ? start : nil
    }

    private func run(encrypt: Bool, _ buffer: UnsafeMutableRawBufferPointer, firstUnit: Int64) -> Bool {
        guard buffer.count > 0 else { return true }
        return cs_xts_units(raw, encrypt ? 1 : 0, fileID, UInt64(firstUnit),
                            buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, Self.unitSize) == 0
    }
}

/// AES-256-GCM for small things sealed whole (metadata, index records, the folder key):
/// `nonce (12) ‖ ciphertext ‖ tag (16)`, a fresh random nonce each time, `context`
/// authenticated with it (a sealed file moved under another name does not open).
package enum Sealing {
    package static let overhead = 12 + 16

    package static func seal(_ plaintext: [UInt8], key: [UInt8], context: [UInt8]) -> [UInt8]? {
        guard key.count == 32, let nonce = Digest.randomBytes(12) else { return nil }
        var out = [UInt8](repeating: 0, count: 12 + plaintext.count + 16)
        let status = out.withUnsafeMutableBufferPointer { o in
            o.baseAddress!.update(from: nonce, count: 12)
            return cs_gcm_seal(key, nonce, context, context.count, plaintext, plaintext.count,
                               o.baseAddress! + 12, o.baseAddress! + 12 + plaintext.count)
        }
        return status == 0 ? out : nil
    }

    /// Nil for a wrong key or context, or damaged, altered or cut input.
    package static func open(_ sealed: UnsafeRawBufferPointer, key: [UInt8], context: [UInt8]) -> [UInt8]? {
        guard key.count == 32, sealed.count >= overhead else { return nil }
        let count = sealed.count - overhead
        var out = [UInt8](repeating: 0, count: count)
        let base = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let status = out.withUnsafeMutableBufferPointer { o in
            cs_gcm_open(key, base, context, context.count, base + 12, count, o.baseAddress, base + 12 + count)
        }
        return status == 0 ? out : nil
    }

    package static func open(_ sealed: [UInt8], key: [UInt8], context: [UInt8]) -> [UInt8]? {
        sealed.withUnsafeBytes { open($0, key: key, context: context) }
    }
}
