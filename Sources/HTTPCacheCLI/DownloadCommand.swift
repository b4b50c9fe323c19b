import ArgumentParser
import CacheHTTP
import CacheLoading
import CacheProxy
import FoundationEssentials
import Glibc
import HTTPCache
import Logging

/// `httpcache download …`: titles kept for offline use. While a proxy serves the folder, it runs them
/// (admin routes); without one, `add` queues a download in the folder and `wait` runs it.
struct DownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Offline downloads: add, list, pause, resume, rm, wait.",
        subcommands: [Add.self, List.self, Pause.self, Resume.self, Remove.self, Wait.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a download (MP4 or any file, an HLS playlist, a DASH MPD); prints its id.")
        @OptionGroup var folder: CacheCommand.Folder
        @Argument(help: "The origin URL (http or https).") var url: String
        @Option(help: "The title's name (default: the URL's last path segment).") var name: String?
        @Option(help: "HLS variants (DASH: representations of each adaptation set): all, highest, lowest, or a BANDWIDTH.") var variant: String?
        @Option(parsing: .unconditional, help: "HLS: only the first SECONDS of media of each media playlist (DASH: of each representation).") var duration: Double?
        @Option(parsing: .unconditional, help: "Only these bytes, START-END inclusive.") var range: String?

        func run() throws {
            quietLogs()
            let record: DownloadRecord = try DownloadAccess(folder).call(.add, [
                "url": url, "name": name, "variant": variant, "duration": duration.map { String($0) }, "range": range,
            ])
            print(record.id)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the downloads (oldest first).")
        @OptionGroup var folder: CacheCommand.Folder
        @Flag(help: "One JSON document (the admin route's) instead of a table.") var json = false

        func run() throws {
            quietLogs()
            let records = try DownloadAccess(folder).list()
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(ControlCharacters.escapedInJSON(String(decoding: try encoder.encode(records), as: UTF8.self)))
                return
            }
            for r in records {
                let total = r.bytesTotal.map { (r.totalIsEstimate ? "~" : "") + ProgressBar.size($0) } ?? "?"
                var line = "\(r.id)  \(r.state.rawValue)  \(ProgressBar.size(r.bytesDone)) of \(total)"
                if r.segmentsTotal > 0 { line += "  \(r.segmentsDone)/\(r.segmentsTotal) segments" }
                line += "  \(r.name)  \(r.url)"
                if let failure = r.failure { line += "  (\(failure.message))" }
                print(ControlCharacters.escaped(line))  // a record written before names were cleaned, a message
            }
        }
    }

    struct Pause: DownloadIDCommand {
        static let configuration = CommandConfiguration(abstract: "Pause a download.")
        static let action = DownloadAction.pause
        @OptionGroup var folder: CacheCommand.Folder
        @Argument var id: String
    }

    struct Resume: DownloadIDCommand {
        static let configuration = CommandConfiguration(abstract: "Resume a paused or failed download.")
        static let action = DownloadAction.resume
        @OptionGroup var folder: CacheCommand.Folder
        @Argument var id: String
    }

    struct Remove: DownloadIDCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Remove a download and every resource it holds that no other download holds.")
        static let action = DownloadAction.remove
        @OptionGroup var folder: CacheCommand.Folder
        @Argument var id: String
    }

    struct Wait: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wait for a download to end (running it when no proxy serves the folder).",
            discussion: "A progress bar goes to stderr on a terminal. Exit status 0 only when it completed.")
        @OptionGroup var folder: CacheCommand.Folder
        @Argument var id: String
        @Option(name: .customLong("max-cache-size"), help: "Without a proxy: the cache size limit while running (default 500MB).")
        var maxCacheSize: String?

        func validate() throws {
            if let maxCacheSize, ByteSize.parse(maxCacheSize) == nil { throw ValidationError("--max-cache-size takes a size such as 500MB") }
        }

        func run() throws {
            quietLogs()
            let bar = ProgressBar(enabled: isatty(2) == 1, verb: ("downloading", "downloaded"))
            let access = DownloadAccess(folder)
            access.maxCacheSize = maxCacheSize.flatMap(ByteSize.parse)
            access.runsDownloads = true
            var record = try access.record(id)
            if record.state == .paused && !access.viaProxy {
                // Nothing could resume it while this command holds the folder.
                throw HTTPCacheError(.canceled, "download \(id) is paused: `httpcache download resume \(id)` first")
            }
            func progress(_ r: DownloadRecord) -> PreloadProgress {
                PreloadProgress(bytesDone: r.bytesDone, bytesTotal: r.bytesTotal, segmentsDone: r.segmentsDone,
                                segmentsTotal: r.segmentsTotal, resourcesDone: r.resourcesDone, resourcesTotal: r.resourcesTotal)
            }
            bar.begin(ControlCharacters.escaped(record.name))
            while !(record.state == .completed || record.state == .failed || record.state == .removed) {
                bar.show(progress(record))
                usleep(200_000)
                record = try access.record(id)
            }
            switch record.state {
            case .completed:
                bar.end(ControlCharacters.escaped(record.name), .success(progress(record)))
                print("\(record.id): completed, \(counted(record.bytesDone, "byte")), \(counted(record.resourcesDone, "resource"))"
                      + (record.segmentsTotal > 0 ? ", \(record.segmentsDone)/\(record.segmentsTotal) segments" : ""))
            case .removed:
                bar.end(ControlCharacters.escaped(record.name), .failure(HTTPCacheError(.canceled, "removed")))
                print("\(record.id): removed")
                throw HTTPCacheError(.canceled, "download \(record.id) was removed")
            default:
                let failure = record.failure ?? HTTPCacheError(.upstream, "failed")
                bar.end(ControlCharacters.escaped(record.name), .failure(failure))
                print(ControlCharacters.escaped("\(record.id): failed: \(failure.message)"))
                throw failure
            }
        }
    }
}

/// `download pause|resume|rm ID`: one action on one download.
protocol DownloadIDCommand: ParsableCommand {
    static var action: DownloadAction { get }
    var folder: CacheCommand.Folder { get }
    var id: String { get }
}

extension DownloadIDCommand {
    func run() throws {
        quietLogs()
        let _: DownloadRecord = try DownloadAccess(folder).call(Self.action, ["id": id])
    }
}

/// Warnings and errors only on stderr: stdout is the commands' answer.
func quietLogs() {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = .warning
        return handler
    }
}

/// A folder's downloads: through the proxy serving it, else opened here (queued ones run only for `wait`).
final class DownloadAccess {
    let folder: CacheCommand.Folder
    var maxCacheSize: Int64?
    var runsDownloads = false
    private let proxy: AdminClient?
    /// The cache opened here, held for a whole `wait`.
    private var opened: MediaCache?
    var viaProxy: Bool { proxy != nil }

    init(_ folder: CacheCommand.Folder) {
        self.folder = folder
        proxy = (try? MediaCache.servingProxy(of: folder.path))?.map { AdminClient(address: $0.address, token: $0.token) }
    }

    deinit { opened?.close() }

    private func cache() throws(HTTPCacheError) -> MediaCache {
        if let opened { return opened }
        let cache = try folder.open(maxCacheSize: maxCacheSize, resumesDownloads: runsDownloads)
        opened = cache
        return cache
    }

    /// POST /admin/downloads/ACTION, or the same on the folder.
    func call(_ action: DownloadAction, _ query: [String: String?]) throws(HTTPCacheError) -> DownloadRecord {
        let given = query.compactMapValues { $0 }
        if let proxy { return try proxy.json("POST", action.path, given) }
        let cache = try cache()
        defer { if !runsDownloads { cache.close(); opened = nil } }
        return try cache.downloadRecordCall { action.perform(on: $0, given) }
    }

    func list() throws(HTTPCacheError) -> [DownloadRecord] {
        if let proxy { return (try proxy.json("GET", "/admin/downloads", [:]) as AdminDownloadList).downloads }
        let cache = try cache()
        defer { cache.close(); opened = nil }
        return cache.downloadRecords()
    }

    func record(_ id: String) throws(HTTPCacheError) -> DownloadRecord {
        let found = if let proxy {
            (try proxy.json("GET", "/admin/downloads", ["id": id]) as AdminDownloadList).downloads.first
        } else {
            try cache().downloadRecords().first { $0.id == id }
        }
        guard let found else { throw HTTPCacheError(.notFound, "no download \(id)") }
        return found
    }
}
