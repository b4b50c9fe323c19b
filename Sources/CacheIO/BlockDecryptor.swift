// Decryption of cached ciphertext at any block offset, so readers and proxy
// clients get plaintext for any byte range: widen the asked range to whole
// 16-byte blocks, decrypt that run at its block offset, cut the asked bytes
// back out. The cipher work is OpenSSL EVP behind cs_cipher (CSupport).
import CSupport

/// The block cipher schemes an origin's ciphertext may use.
package enum CipherKind: Sendable, Equatable {
    /// AES-128 in counter mode: the IV is the initial counter block and the
    /// whole 16-byte block counts as one big-endian 128-bit integer (as
    /// `openssl enc -aes-128-ctr` does). Any length; a short last block is fine.
    case aes128CTR
    /// AES-128 in ECB mode without padding: each block on its own, lengths
    /// are multiples of 16.
    case aes128ECB
}

/// How one resource is encrypted: scheme, key and IV.
package struct DecryptionSpec: Sendable, Equatable {
    package var kind: CipherKind
    /// 16 bytes.
    package var key: [UInt8]
    /// 16 bytes for CTR (the counter block of byte 0). Unused by ECB, where
    /// it may be empty.
    package var iv: [UInt8]

    package init(kind: CipherKind, key: [UInt8], iv: [UInt8] = []) {
        self.kind = kind
        self.key = key
        self.iv = iv
    }
}

/// Why a decryption could not be set up or run.
package enum DecryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key is not 16 bytes (the count given).
    case badKeyLength(Int)
    /// The IV is not 16 bytes (the count given); ECB also takes an empty one.
    case badIVLength(Int)
    /// The offset is negative or not a multiple of 16.
    case unalignedOffset(Int64)
    /// ECB input whose length is not a multiple of 16.
    case lengthNotBlockAligned(Int)
    /// The output buffer is shorter than the input.
    case outputTooSmall(needed: Int, available: Int)
    /// OpenSSL refused; its error string.
    case openSSL(String)

    package var description: String {
        switch self {
        case .badKeyLength(let n): "AES-128 key must be 16 bytes, got \(n)"
        case .badIVLength(let n): "AES-128 IV must be 16 bytes, got \(n)"
        case .unalignedOffset(let o): "decryption offset \(o) is not a non-negative multiple of 16"
        case .lengthNotBlockAligned(let n): "AES-128-ECB input of \(n) bytes is not a multiple of 16"
        case .outputTooSmall(let needed, let available):
            "decryption output holds \(available) bytes, \(needed) needed"
        case .openSSL(let message): "OpenSSL decryption failed: \(message)"
        }
    }
}

/// Decrypts runs of whole cipher blocks of one resource at their offsets.
///
/// Holds one OpenSSL context, so it is single-threaded: use it from one
/// thread at a time (it is deliberately not Sendable), and make one per
/// thread when decrypting in parallel. The context is freed in deinit.
package final class BlockDecryptor {
    /// The cipher block size: offsets and widened ranges are multiples of it.
    package static let blockSize = 16

    package let spec: DecryptionSpec
    private let raw: OpaquePointer

    package init(_ spec: DecryptionSpec) throws(DecryptionError) {
        guard spec.key.count == 16 else { throw .badKeyLength(spec.key.count) }
        if spec.kind == .aes128CTR, spec.iv.count != 16 { throw .badIVLength(spec.iv.count) }
        if spec.kind == .aes128ECB, !spec.iv.isEmpty, spec.iv.count != 16 { throw .badIVLength(spec.iv.count) }
        let kind: Int32 = switch spec.kind {
        case .aes128CTR: Int32(CS_CIPHER_AES128_CTR)
        case .aes128ECB: Int32(CS_CIPHER_AES128_ECB)
        }
        guard let raw = spec.key.withUnsafeBufferPointer({ cs_cipher_new(kind, $0.baseAddress) }) else {
            throw .openSSL(Self.lastOpenSSLError())
        }
        self.spec = spec
        self.raw = raw
    }

    deinit { cs_cipher_free(raw) }

    /// Decrypts `input`, the ciphertext at byte `offset` of the resource, into
    /// the start of `output` (which may be the same memory as `input`, but
    /// must not partly overlap it).
    /// `offset` must be a multiple of 16. For CTR the length is free (a short
    /// tail is the end of the resource); for ECB it must be a multiple of 16.
    package func decrypt(_ input: UnsafeRawBufferPointer, atOffset offset: Int64,
                         into output: UnsafeMutableRawBufferPointer) throws(DecryptionError) {
        guard offset >= 0, offset % Int64(Self.blockSize) == 0 else { throw .unalignedOffset(offset) }
        if spec.kind == .aes128ECB, input.count % Self.blockSize != 0 {
            throw .lengthNotBlockAligned(input.count)
        }
        guard output.count >= input.count else {
            throw .outputTooSmall(needed: input.count, available: output.count)
        }
        guard input.count > 0 else { return }
        let block = UInt64(offset / Int64(Self.blockSize))
        let status = spec.iv.withUnsafeBufferPointer { iv in
            cs_cipher_decrypt_at(raw, iv.baseAddress, block,
                                 input.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                 output.baseAddress!.assumingMemoryBound(to: UInt8.self), input.count)
        }
        // -EINVAL cannot come back: every argument was checked above.
        guard status == 0 else { throw .openSSL(Self.lastOpenSSLError()) }
    }

    /// Convenience over `decrypt(_:atOffset:into:)` returning a new array.
    package func decrypt(_ input: [UInt8], atOffset offset: Int64) throws(DecryptionError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: input.count)
        // Typed throws do not pass through the buffer closures: the error comes out as a Result.
        try input.withUnsafeBytes { inBytes in
            output.withUnsafeMutableBytes { outBytes in
                Result { () throws(DecryptionError) in try decrypt(inBytes, atOffset: offset, into: outBytes) }
            }
        }.get()
        return output
    }

    // MARK: range arithmetic

    /// `range` widened to whole 16-byte blocks (start rounded down, end
    /// rounded up), then clamped to `totalLength` when it is known, so the
    /// last block of a CTR resource may be short. A range that starts at or
    /// past the end comes back empty; so does an empty range.
    package static func widen(_ range: Range<Int64>, totalLength: Int64?) -> Range<Int64> {
        precondition(range.lowerBound >= 0, "byte ranges start at 0 or later")
        let block = Int64(blockSize)
        // Bytes past the end do not exist: drop them before rounding, so a
        // range beyond the end cannot pull in the last block.
        let range = totalLength.map { range.clamped(to: 0..<max($0, 0)) } ?? range
        let lower = range.lowerBound / block * block
        guard !range.isEmpty else { return lower..<lower }
        var upper = (range.upperBound + block - 1) / block * block
        if let totalLength { upper = min(upper, totalLength) }
        return lower..<upper
    }

    /// Where the bytes of `requested` sit inside plaintext that covers
    /// `widened` (as returned by `widen`): indices into that buffer. Parts of
    /// `requested` outside `widened` (past the resource's end) are dropped.
    package static func cut(_ requested: Range<Int64>, from widened: Range<Int64>) -> Range<Int> {
        let kept = requested.clamped(to: widened)
        return Int(kept.lowerBound - widened.lowerBound)..<Int(kept.upperBound - widened.lowerBound)
    }

    /// The bytes of `requested` out of `plaintext`, which holds the
    /// plaintext of `widened` (a view into the same memory, no copy).
    package static func cut(_ requested: Range<Int64>, from plaintext: UnsafeRawBufferPointer,
                            covering widened: Range<Int64>) -> UnsafeRawBufferPointer {
        precondition(plaintext.count >= widened.count, "plaintext shorter than the widened range")
        return UnsafeRawBufferPointer(rebasing: plaintext[cut(requested, from: widened)])
    }

    /// The calling thread's OpenSSL error, taken from its queue.
    private static func lastOpenSSLError() -> String {
        var message = [CChar](repeating: 0, count: 256)
        cs_cipher_last_error(&message, message.count)
        return message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// One OpenSSL context is mutable state without a lock: not shareable.
@available(*, unavailable)
extension BlockDecryptor: Sendable {}
