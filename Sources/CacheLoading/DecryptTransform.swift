import CacheIO

/// How a resource is encrypted, by origin URL (nil: plain). A throw fails the response or read, touching
/// nothing cached. Called on the loop once per response or reader range: it must be quick (keys in memory).
package typealias DecryptionLookup = @Sendable (String) throws -> DecryptionSpec?

/// Why decryption could not be set up: the lookup threw, or gave an unusable key or IV.
package struct DecryptionSetupError: Error, CustomStringConvertible, Sendable {
    package let url: String
    package let reason: String
    /// The host's own error, when the lookup threw one.
    package let underlying: (any Error & Sendable)?

    package init(url: String, reason: String, underlying: (any Error & Sendable)? = nil) {
        self.url = url
        self.reason = reason
        self.underlying = underlying
    }

    package var description: String { "no usable decryption for \(url): \(reason)" }
}

/// Decryption as a mapping transform: output byte `i` is the plaintext of input byte `i`. `BodyPipeline`
/// widens the range to whole 16-byte blocks (`inputRange`) and cuts the asked bytes back out. Input comes in
/// pieces of any size: a partial block is held back, so output runs contiguously from the first input offset.
package final class DecryptTransform {
    private let decryptor: BlockDecryptor
    /// Ciphertext of a block begun but not complete, starting at `carryOffset`.
    private var carry: [UInt8] = []
    private var carryOffset: Int64 = 0

    package init(_ spec: DecryptionSpec) throws(DecryptionError) {
        decryptor = try BlockDecryptor(spec)
    }

    /// Looks `url` up and builds its transform: nil for plain resources.
    package static func make(url: String, lookup: DecryptionLookup) -> Result<DecryptTransform?, DecryptionSetupError> {
        let spec: DecryptionSpec?
        do { spec = try lookup(url) } catch {
            return .failure(DecryptionSetupError(url: url, reason: "the key lookup failed: \(error)", underlying: error))
        }
        guard let spec else { return .success(nil) }
        do { return .success(try DecryptTransform(spec)) } catch {
            return .failure(DecryptionSetupError(url: url, reason: error.description))
        }
    }

    /// The ciphertext needed for the plaintext `range`: whole blocks.
    package static func inputRange(forOutput range: Range<Int64>, totalLength: Int64?) -> Range<Int64> {
        // An open end stays open (rounding Int64.max up would overflow).
        if range.upperBound == Int64.max {
            let block = Int64(BlockDecryptor.blockSize)
            return range.lowerBound / block * block..<Int64.max
        }
        return BlockDecryptor.widen(range, totalLength: totalLength)
    }

    package func process(_ input: UnsafeRawBufferPointer, at offset: Int64, into output: inout [UInt8]) throws(TransformError) {
        guard !input.isEmpty else { return }
        let block = BlockDecryptor.blockSize
        if carry.isEmpty {
            guard offset % Int64(block) == 0 else {
                throw TransformError("decryption input starts at \(offset), inside a cipher block")
            }
            carryOffset = offset
        } else if carryOffset + Int64(carry.count) != offset {
            throw TransformError("decryption input at \(offset) does not follow \(carryOffset + Int64(carry.count))")
        }
        var rest = input
        if !carry.isEmpty {
            // Complete the held-back block first.
            let take = min(block - carry.count, rest.count)
            carry.append(contentsOf: rest[0..<take])
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            guard carry.count == block else { return }
            try decrypt(carry, at: carryOffset, appending: &output)
            carryOffset += Int64(block)
            carry.removeAll(keepingCapacity: true)
        }
        let whole = rest.count / block * block
        if whole > 0 {
            try decrypt(UnsafeRawBufferPointer(rebasing: rest[0..<whole]), at: carryOffset, appending: &output)
            carryOffset += Int64(whole)
        }
        carry.append(contentsOf: rest[whole...])
    }

    package func finish(into output: inout [UInt8]) throws(TransformError) {
        guard !carry.isEmpty else { return }
        // CTR: a short last block. (ECB is whole blocks: a tail means a bad resource.)
        let tail = carry
        carry.removeAll()
        try decrypt(tail, at: carryOffset, appending: &output)
        carryOffset += Int64(tail.count)
    }

    private func decrypt(_ input: [UInt8], at offset: Int64, appending output: inout [UInt8]) throws(TransformError) {
        var failure: TransformError?
        input.withUnsafeBytes { bytes in
            do throws(TransformError) { try decrypt(bytes, at: offset, appending: &output) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    private func decrypt(_ input: UnsafeRawBufferPointer, at offset: Int64, appending output: inout [UInt8]) throws(TransformError) {
        // Copy the ciphertext in (a memcpy) and decrypt it in place.
        let start = output.count
        output.append(contentsOf: input)
        var failure: DecryptionError?
        output.withUnsafeMutableBytes { bytes in
            let run = UnsafeMutableRawBufferPointer(rebasing: bytes[start...])
            do throws(DecryptionError) {
                try decryptor.decrypt(UnsafeRawBufferPointer(run), atOffset: offset, into: run)
            } catch { failure = error }
        }
        if let failure {
            output.removeSubrange(start...)
            throw TransformError(failure.description)
        }
    }
}
