/// MPEG-DASH manifests (ISO/IEC 23009-1) as far as a caching proxy needs them: detection,
/// rewriting every URL with every other byte kept, reading the segments a preload fetches.
package enum DASH {}

package enum DASHError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedXML(offset: Int, problem: String)
    case notMPD
    case invalidManifestURL(String)
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
