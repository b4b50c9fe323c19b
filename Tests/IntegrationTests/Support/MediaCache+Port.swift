import HTTPCache

extension MediaCache {
    /// The port it serves on (0 before `serve()`), for building test URLs.
    var servingPort: Int { port ?? 0 }
}
