// MPEG-DASH manifests (MPD, ISO/IEC 23009-1) as far as a caching proxy needs
// them: detection, rewriting every URL on the way out with every other byte
// kept, and reading the segments a preload fetches.

/// Namespace for MPD detection, rewriting and parsing.
package enum DASH {}

/// Why an MPD cannot be rewritten or read.
package enum DASHError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not well-formed XML (at this byte offset).
    case malformedXML(offset: Int, problem: String)
    /// Well-formed, but the root element is not `MPD`.
    case notMPD
    /// The manifest's own URL is not an absolute http(s) URL.
    case invalidManifestURL(String)
    /// A value the reader needs is missing or unusable.
    case invalidValue(element: String, attribute: String)

    package var description: String {
        switch self {
        case .malformedXML(let offset, let problem): return "malformed XML at byte \(offset): \(problem)"
        case .notMPD: return "the root element is not MPD"
        case .invalidManifestURL(let url): return "the manifest URL \(url) is not an absolute http(s) URL"
        case .invalidValue(let element, let attribute): return "\(element)@\(attribute) is missing or unusable"
        }
    }
}
