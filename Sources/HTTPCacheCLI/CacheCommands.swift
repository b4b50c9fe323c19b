import ArgumentParser
import CacheLoading
import CacheProxy
import FoundationEssentials
import HTTPCache

struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List, remove, export and import cached resources.",
        discussion: """
        Works on a folder whether or not a proxy is serving it: with no proxy, \
        the folder is opened (and locked) directly; while a proxy serves it, \
        the request goes to that proxy, so there is never a second writer.
        """,
        subcommands: [List.self, Remove.self, Clear.self, Export.self, Import.self, Unpin.self, Purge.self, Rekey.self]
    )

    struct Folder: ParsableArguments {
        @Option(name: .customLong("cache-dir"), help: "Cache folder (default: the one `serve` uses).")
        var cacheDirectory: String?
        @Option(name: .customLong("encryption-key-file"),
                help: "The key of an encrypted folder (not needed while a proxy serves it).")
        var keyFile: String?

        var path: String { cacheDirectory ?? defaultCacheDirectory() }

        func withCache<T>(_ body: (any CacheOperating) async throws -> T) async throws -> T {
            if let proxy = try MediaCache.servingProxy(of: path) {
                return try await body(AdminClient(address: proxy.address, token: proxy.token))
            }
            let cache = try open()
            defer { cache.close() }
            return try await body(cache)
        }

        /// The folder opened here (no proxy serves it); by default without eviction (not this command's to do)
        /// and without running downloads (they run in `serve` and `download wait`).
        func open(maxCacheSize: Int64? = .max, resumesDownloads: Bool = false) throws(HTTPCacheError) -> MediaCache {
            var configuration = HTTPCacheConfiguration(cacheDirectory: path)
            if let maxCacheSize { configuration.maxCacheSize = maxCacheSize }
            if let keyFile { configuration.encryptionKey = try HTTPCacheConfiguration.encryptionKey(fromFile: keyFile) }
            configuration.resumesDownloads = resumesDownloads
            return try MediaCache(configuration: configuration)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List cached resources, most recently used first.")
        @OptionGroup var folder: Folder
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let resources = try await folder.withCache { try $0.cachedResources() }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(resources.map(ResourceRow.init)), as: UTF8.self))
                return
            }
            var total: Int64 = 0
            for resource in resources {
                total += resource.cachedBytes
                let length = resource.totalLength.map(String.init) ?? "?"
                let ranges = resource.cachedRanges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
                let when = Date(timeIntervalSince1970: resource.lastAccess).formatted(.iso8601)
                let marks = (resource.isComplete ? " (complete)" : "") + (resource.isPinned ? " (pinned)" : "")
                // The variant column tells rows of one URL apart (a proxy URL's and a forward request's).
                print("\(resource.url)\n    \(resource.cachedBytes)/\(length) bytes\(marks)"
                    + "  ranges \(ranges.isEmpty ? "none" : ranges)  last access \(when)  variant \(resource.variant)")
            }
            print("\(counted(resources.count, "resource")), \(counted(total, "byte"))")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove one cached resource.")
        @OptionGroup var folder: Folder
        @Argument(help: "The origin URL.") var url: String
        func run() async throws { try await folder.withCache { try $0.removeResource(for: url) } }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove every cached resource.")
        @OptionGroup var folder: Folder
        func run() async throws { try await folder.withCache { try $0.removeAllResources() } }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write a completely cached resource to a file.")
        @OptionGroup var folder: Folder
        @Argument(help: "The origin URL.") var url: String
        @Argument(help: "Where to put the file.") var path: String
        func run() async throws {
            let target = absolute(path)
            try await folder.withCache { try await $0.exportResource(for: url, to: target) }
        }
    }

    struct Unpin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let eviction take what `preload --pin URL` pinned.")
        @OptionGroup var folder: Folder
        @Argument(help: "The URL given to preload --pin.") var url: String
        func run() async throws {
            let count = try await folder.withCache { try $0.unpin(url) }
            print("\(counted(count, "resource")) unpinned")
        }
    }

    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Purge a URL (every stored variant), every URL starting with --prefix, or what --download ID holds, even in use.")
        @OptionGroup var folder: Folder
        @Option(name: .customLong("prefix"), help: "Purge every cached URL starting with this.") var prefix: String?
        @Option(name: .customLong("download"), help: "Purge every resource this download (title) holds, and remove it.")
        var download: String?
        @Argument(help: "The origin URL (without --prefix).") var url: String?

        func validate() throws {
            if [prefix, url, download].compactMap({ $0 }).count != 1 {
                throw ValidationError("give one of a URL, --prefix URL or --download ID")
            }
            if prefix == "" { throw ValidationError("--prefix takes a URL prefix, e.g. https://media.example.com/show/") }
        }

        func run() async throws {
            let target: AdminRequest.PurgeTarget = prefix.map { .prefix($0) } ?? download.map { .download($0) } ?? .url(url ?? "")
            let count = try await folder.withCache { try $0.purge(target) }
            print("\(counted(count, "resource")) purged")
        }
    }

    struct Rekey: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the encryption key of a cache folder (not while it is served).",
            discussion: """
            Re-encrypts the folder in place: every data file, metadata file and download record \
            under a new content key sealed under the new key, so the old key opens nothing \
            afterwards. Interrupted (a crash, kill -9, power loss), the folder refuses to open \
            until the same command is run again, which finishes the work. The first start \
            afterwards reads every entry once to rebuild the index (see README, encryption at rest).
            """)
        @Option(name: .customLong("cache-dir"), help: "Cache folder (default: the one `serve` uses).")
        var cacheDirectory: String?
        @Option(name: .customLong("old-key-file"), help: "The folder's current key.") var oldKeyFile: String
        @Option(name: .customLong("new-key-file"), help: "The key to use from now on.") var newKeyFile: String
        func run() throws {
            let path = cacheDirectory ?? defaultCacheDirectory()
            let old = try HTTPCacheConfiguration.encryptionKey(fromFile: oldKeyFile)
            let new = try HTTPCacheConfiguration.encryptionKey(fromFile: newKeyFile)
            nonisolated(unsafe) var reported = ContinuousClock.now
            let summary = try MediaCache.rekey(cacheDirectory: path, oldKey: old, newKey: new) { done in
                // A long rekey says how far it is, every few seconds, on stderr.
                guard reported.duration(to: .now) >= .seconds(5) else { return }
                reported = .now
                printError("rekeying: \(done.entries) entries, \(done.bytes) bytes so far\n")
            }
            print("rekeyed \(path): \(summary.entries) entries (\(summary.bytes) bytes) re-encrypted, "
                  + "\(summary.downloadRecords) download records resealed, \(summary.filesRemoved) stray files removed")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Use a local file as the cached copy of a URL.")
        @OptionGroup var folder: Folder
        @Argument(help: "The origin URL.") var url: String
        @Argument(help: "The local file.") var path: String
        @Option(name: .customLong("content-type"), help: "Content-Type to serve it with.") var contentType: String?
        func run() async throws {
            let source = absolute(path)
            try await folder.withCache { try await $0.importResource(for: url, from: source, contentType: contentType) }
        }
    }
}

/// A path made absolute: a serving proxy resolves paths from its own directory.
func absolute(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
}

/// The operations of `httpcache cache …`, on the folder opened here (`MediaCache`) or through the proxy
/// that serves it (`AdminClient`): the same answers and errors either way, under `MediaCache`'s names.
protocol CacheOperating {
    func cachedResources() throws(HTTPCacheError) -> [CachedResource]
    func removeResource(for url: String) throws(HTTPCacheError)
    func removeAllResources() throws(HTTPCacheError)
    func exportResource(for url: String, to path: String) async throws(HTTPCacheError)
    func importResource(for url: String, from path: String, contentType: String?) async throws(HTTPCacheError)
    func unpin(_ url: String) throws(HTTPCacheError) -> Int
    func purge(_ target: AdminRequest.PurgeTarget) throws(HTTPCacheError) -> Int
}

extension MediaCache: CacheOperating {
    func purge(_ target: AdminRequest.PurgeTarget) throws(HTTPCacheError) -> Int {
        switch target {
        case .url(let url): try purge(url: url)
        case .prefix(let prefix): purge(prefix: prefix)
        case .download(let id): try purge(download: id)
        }
    }
}

extension AdminClient: CacheOperating {
    func cachedResources() throws(HTTPCacheError) -> [CachedResource] {
        let listing: CacheListing = try send(.list)
        return listing.entries.map(CachedResource.init)
    }
    func removeResource(for url: String) throws(HTTPCacheError) { try perform(.remove(url: url)) }
    func removeAllResources() throws(HTTPCacheError) { try perform(.clear) }
    func exportResource(for url: String, to path: String) throws(HTTPCacheError) { try perform(.export(url: url, path: path)) }
    func importResource(for url: String, from path: String, contentType: String?) throws(HTTPCacheError) {
        try perform(.importFile(url: url, path: path, contentType: contentType))
    }
    func unpin(_ url: String) throws(HTTPCacheError) -> Int { (try send(.unpin(url: url)) as AdminUnpinned).unpinned }
    func purge(_ target: AdminRequest.PurgeTarget) throws(HTTPCacheError) -> Int { (try send(.purge(target)) as AdminPurged).purged }
}

/// JSON shape of `cache list --json`.
struct ResourceRow: Codable {
    var url: String
    var length: Int64?
    var type: String?
    var cached: Int64
    var ranges: String
    var lastAccess: Double
    var complete: Bool
    var pinned: Bool
    /// primary, forward, vary or encoding (`CachedResource.variant`).
    var variant: String

    init(_ resource: CachedResource) {
        url = resource.url
        length = resource.totalLength
        type = resource.contentType
        cached = resource.cachedBytes
        ranges = resource.cachedRanges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
        lastAccess = resource.lastAccess
        complete = resource.isComplete
        pinned = resource.isPinned
        variant = resource.variant
    }
}
