/// Widen → transform → cut for one body range: the one place mapping asked bytes to the
/// cached bytes read for them. Input comes in order, any size; the output is exactly the
/// `wanted` bytes. Loop thread only (a decryptor carries state).
package struct BodyPipeline {
    package let transform: BodyTransform
    /// The output bytes asked for (upper bound `Int64.max`: to the end).
    package private(set) var wanted: Range<Int64> = 0..<0
    /// The output offset of the transform's next byte (a decryptor holds back partial blocks).
    private var outputAt: Int64?

    package init(_ transform: BodyTransform) { self.transform = transform }

    /// Sets the output range and returns the input bytes to read for it.
    package mutating func want(_ output: Range<Int64>, totalLength: Int64?) -> Range<Int64> {
        wanted = output
        outputAt = nil
        return transform.inputRange(forOutput: output, totalLength: totalLength)
    }

    /// Input bytes at `offset`: appends the wanted part of their output to `out`.
    package mutating func feed(_ input: UnsafeRawBufferPointer, at offset: Int64,
                               into out: inout [UInt8]) throws(TransformError) {
        switch transform {
        case .none, .rewriteManifest:
            let produced = offset..<(offset + Int64(input.count))
            let cut = produced.clamped(to: wanted)
            guard !cut.isEmpty else { return }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[Int(cut.lowerBound - offset)..<Int(cut.upperBound - offset)]))
        case .decrypt(let decryptor):
            let start = out.count
            try decryptor.process(input, at: offset, into: &out)
            cut(out: &out, from: start, producedAt: outputAt ?? offset)
        }
    }

    /// The input ended: appends what the transform held back (a short last block).
    package mutating func finish(into out: inout [UInt8]) throws(TransformError) {
        guard case .decrypt(let decryptor) = transform else { return }
        let start = out.count
        try decryptor.finish(into: &out)
        cut(out: &out, from: start, producedAt: outputAt ?? wanted.lowerBound)
    }

    /// Keeps of `out[start...]` (output from `producedAt`) only the wanted bytes.
    private mutating func cut(out: inout [UInt8], from start: Int, producedAt: Int64) {
        let produced = producedAt..<(producedAt + Int64(out.count - start))
        outputAt = produced.upperBound
        let keep = produced.clamped(to: wanted)
        guard !keep.isEmpty else { return out.removeSubrange(start...) }
        out.removeSubrange((start + Int(keep.upperBound - producedAt))...)
        out.removeSubrange(start..<(start + Int(keep.lowerBound - producedAt)))
    }
}
