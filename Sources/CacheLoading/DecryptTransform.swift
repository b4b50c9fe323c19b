import CacheIO

/// Chooses how a resource is encrypted, by origin URL; nil: plain. It may
/// throw (no key for this URL): the response or read fails with that error
/// and nothing cached is touched. Called on the loop thread once per
/// response or reader range, so it must be quick (hold keys in memory).
package typealias DecryptionLookup = @Sendable (String) throws -> DecryptionSpec?

/// Why a resource's decryption could not be set up: the lookup threw, or
/// returned an unusable key or IV.
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

/// Decryption as a mapping body transform: output byte `i` is the plaintext
/// of ciphertext byte `i`, so lengths and ranges are unchanged. `BodyPipeline`
/// widens the asked range to whole 16-byte blocks (`inputRange`), this
/// decrypts block-aligned runs, and the pipeline cuts the asked bytes back out.
///
/// Input arrives in pieces of any size (bytes land as the origin sends them),
/// so a partial block is held back until the rest of it comes; output thus
/// always starts at the first input offset and runs contiguously from there.
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
        // "To the end" of a body of unknown length stays open-ended (rounding
        // Int64.max up would overflow); only the start needs a block boundary.
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
        // CTR: the resource's short last block. ECB ciphertext is whole blocks,
        // so a tail there means a truncated or non-ECB resource.
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
