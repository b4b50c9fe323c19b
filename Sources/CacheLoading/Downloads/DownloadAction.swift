import CacheIO

/// What a client asks of the downloads: the closed set shared by the admin
/// routes (`POST /admin/downloads/<action>`), the CLI (remote or on the
/// folder) and the page, so no end spells an action the other does not know.
package enum DownloadAction: String, CaseIterable, Sendable {
    case add, pause, resume, remove

    package var path: String { "/admin/downloads/" + rawValue }

    /// The action of an admin route path; nil for any other path.
    package init?(path: Substring) {
        guard path.hasPrefix("/admin/downloads/"),
              let action = DownloadAction(rawValue: String(path.dropFirst("/admin/downloads/".count))) else { return nil }
        self = action
    }

    /// Performs the action on `manager` with the request's arguments
    /// (`url`, `name`, `variant`, `duration`, `range` for add; `id` for the others).
    package func perform(on manager: DownloadManager, _ query: [String: String]) -> Result<DownloadRecord, HTTPCacheError> {
        let id = query["id"] ?? ""
        switch self {
        case .add:
            guard let url = query["url"] else { return .failure(HTTPCacheError(.invalidArgument, "url missing")) }
            // A duration that is not a number is refused by add (as -1), not dropped.
            let duration = query["duration"].map { Double($0) ?? -1 }
            return manager.add(url: url, name: query["name"], variant: query["variant"], duration: duration,
                               range: query["range"])
        case .pause: return manager.pause(id)
        case .resume: return manager.resume(id)
        case .remove: return manager.remove(id)
        }
    }
}
