// Plaintext of any byte range of cached ciphertext: widen the range to whole 16-byte
// blocks, decrypt that run at its offset (OpenSSL EVP behind cs_cipher), cut the bytes out.
import CSupport

package enum CipherKind: Sendable, Equatable {
    /// The IV is the first counter block, one big-endian 128-bit integer (as
    /// `openssl enc -aes-128-ctr`). Any length.
    case aes128CTR
    case aes128ECB  // no padding: lengths are multiples of 16
}

package struct DecryptionSpec: Sendable, Equatable {
    package var kind: CipherKind
    package var key: [UInt8]  // 16 bytes
    package var iv: [UInt8]  // 16 bytes for CTR (the counter block of byte 0); ECB ignores it (may be empty)

    package init(kind: CipherKind, key: [UInt8], iv: [UInt8] = []) {
        self.kind = kind
        self.key = key
        self.iv = iv
    }
}

package enum DecryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    case badKeyLength(Int)
    case badIVLength(Int)  // ECB also takes an empty IV
    case unalignedOffset(Int64)
    case lengthNotBlockAligned(Int)
    case outputTooSmall(needed: Int, available: Int)
    case openSSL(String)  // OpenSSL's error string

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

/// Decrypts runs of whole blocks of one resource at their offsets. One OpenSSL context, so
/// deliberately not Sendable: one per thread when decrypting in parallel.
package final class BlockDecryptor {
    package static let blockSize = 16

    package let spec: DecryptionSpec
    private let raw: OpaquePointer

    package init(_ spec: DecryptionSpec) throws(DecryptionError) {
        guard spec.key.count == 16 else { throw .badKeyLength(spec.key.count) }
        let ivOK = spec.iv.count == 16 || (spec.kind == .aes128ECB && spec.iv.isEmpty)
        guard ivOK else { throw .badIVLength(spec.iv.count) }
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

    /// Decrypts the ciphertext at byte `offset` (a multiple of 16) into the start of `output`,
    /// which may be `input` but not partly overlap it. ECB lengths must be multiples of 16.
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

    /// `range` widened to whole blocks, then clamped to a known `totalLength` (a CTR resource's
    /// last block may be short). Empty when empty or starting at or past the end.
    package static func widen(_ range: Range<Int64>, totalLength: Int64?) -> Range<Int64> {
        precondition(range.lowerBound >= 0, "byte ranges start at 0 or later")
        let block = Int64(blockSize)
        // Clamped before rounding, so a range beyond the end cannot pull in the last block.
        let range = totalLength.map { range.clamped(to: 0..<max($0, 0)) } ?? range
        let lower = range.lowerBound / block * block
        guard !range.isEmpty else { return lower..<lower }
        var upper = (range.upperBound + block - 1) / block * block
        if let totalLength { upper = min(upper, totalLength) }
        return lower..<upper
    }

    /// Indices of `requested` in plaintext covering `widened`; parts outside it are dropped.
    package static func cut(_ requested: Range<Int64>, from widened: Range<Int64>) -> Range<Int> {
        let kept = requested.clamped(to: widened)
        return Int(kept.lowerBound - widened.lowerBound)..<Int(kept.upperBound - widened.lowerBound)
    }

    /// The bytes of `requested` in `plaintext` of `widened`, without a copy.
    package static func cut(_ requested: Range<Int64>, from plaintext: UnsafeRawBufferPointer,
                            covering widened: Range<Int64>) -> UnsafeRawBufferPointer {
        precondition(plaintext.count >= widened.count, "plaintext shorter than the widened range")
        return UnsafeRawBufferPointer(rebasing: plaintext[cut(requested, from: widened)])
    }

    private static func lastOpenSSLError() -> String {
        var message = [CChar](repeating: 0, count: 256)
        cs_cipher_last_error(&message, message.count)
        return message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

@available(*, unavailable)
extension BlockDecryptor: Sendable {}
