import ArgumentParser
import CacheLoading
import CacheProxy
import Glibc
import HTTPCache

struct PreloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preload",
        abstract: "Fetch URLs (HLS: master, variants, renditions, keys, init sections, segments; DASH: every period's chosen representations) into the cache.",
        discussion: """
        Works whether or not a proxy serves the folder: while one does, the \
        proxy does the preload (through the same downloads its players use); \
        otherwise the folder is opened here. A progress bar goes to stderr \
        when it is a terminal; one summary line per URL goes to stdout. The \
        exit status is that of the first failure (10 + |code|).
        """
    )

    @OptionGroup var folder: CacheCommand.Folder
    @Argument(help: "Origin URLs (http or https).") var urls: [String]
    @Option(parsing: .unconditional, help: "Only these bytes of the resource, START-END inclusive.") var range: String?
    @Option(help: "HLS variants (DASH: representations of each adaptation set): all, highest, lowest, or a BANDWIDTH (the highest not above it).")
    var variant = "all"
    // Unconditional: "-5" is this option's (bad) value, not an option of its own.
    @Option(parsing: .unconditional, help: "HLS: only the first SECONDS of media of each media playlist (DASH: of each representation).")
    var duration: Double?
    @Option(help: "DASH: only the audio and text tracks in this language (e.g. en; all of a kind when none is).")
    var language: String?
    @Flag(help: "Keep what is preloaded out of LRU eviction until `httpcache cache unpin URL`.") var pin = false

    func validate() throws {
        if urls.isEmpty { throw ValidationError("give at least one URL") }
        if let range, parsedRange(range) == nil {
            throw ValidationError("--range takes START-END, the first and last byte (START <= END, e.g. 0-1048575); got \(range)")
        }
        if PreloadVariantChoice(variant) == nil { throw ValidationError("--variant wants all, highest, lowest or a bandwidth") }
        if let duration, !(duration > 0) { throw ValidationError("--duration takes a number of seconds above 0; got \(duration)") }
        if let language, language.isEmpty { throw ValidationError("--language takes a language tag, e.g. en") }
    }

    func run() throws {
        quietLogs()
        let bar = ProgressBar(enabled: isatty(2) == 1)
        var firstFailure: HTTPCacheError?
        let outcomes: [(String, Result<PreloadProgress, HTTPCacheError>)]
        if let proxy = try MediaCache.servingProxy(of: folder.path) {
            let client = AdminClient(address: proxy.address, token: proxy.token)
            outcomes = urls.map { url in (url, remotePreload(url, client: client, bar: bar)) }
        } else {
            outcomes = try localPreloads(bar: bar)
        }
        for (url, outcome) in outcomes {
            switch outcome {
            case .success(let progress):
                print("\(url): done, \(counted(progress.bytesDone, "byte")), \(counted(progress.resourcesDone, "resource"))"
                      + (progress.segmentsTotal > 0 ? ", \(progress.segmentsDone)/\(progress.segmentsTotal) segments" : "")
                      + (progress.live ? " (live: what was available now)" : ""))
            case .failure(let error):
                print("\(url): failed: \(error.message)")
                if firstFailure == nil { firstFailure = error }
            }
        }
        fflush(nil)
        if let firstFailure { throw firstFailure }
    }

    /// `--range` read as the admin route reads it: START...END inclusive.
    private func parsedRange(_ text: String) -> ClosedRange<Int64>? {
        PreloadRequest.parseRange(text).map { $0.lowerBound...($0.upperBound - 1) }
    }

    private var options: PreloadOptions {
        PreloadOptions(variants: PreloadVariantChoice(variant) ?? .all, duration: duration, pin: pin, language: language)
    }

    /// No proxy serves the folder: open it here (no eviction by this command).
    private func localPreloads(bar: ProgressBar) throws -> [(String, Result<PreloadProgress, HTTPCacheError>)] {
        let cache = try folder.open()
        defer { cache.close() }
        return urls.map { url in
            let task: PreloadTask
            do throws(HTTPCacheError) {
                task = try cache.preload(url, range: range.flatMap(parsedRange), options: options)
            } catch {
                return (url, .failure(error))
            }
            bar.begin(url)
            while true {
                if let result = task.wait(timeout: 0.2) {
                    bar.end(url, result)
                    return (url, result)
                }
                bar.show(task.progress)
            }
        }
    }

    /// A proxy serves the folder: it preloads; this polls its status.
    private func remotePreload(_ url: String, client: AdminClient, bar: ProgressBar) -> Result<PreloadProgress, HTTPCacheError> {
        do throws(HTTPCacheError) {
            let started: AdminPreloadStarted = try client.send(.preload(options.request(url, range: range.flatMap(parsedRange))))
            bar.begin(url)
            while true {
                let status: AdminPreloadStatus = try client.send(.preloadStatus(id: started.id))
                var progress = PreloadProgress(bytesDone: status.bytesDone, bytesTotal: status.bytesTotal,
                                               segmentsDone: status.segmentsDone, segmentsTotal: status.segmentsTotal,
                                               resourcesDone: status.resourcesDone, resourcesTotal: status.resourcesTotal)
                progress.live = status.live ?? false
                switch status.state {
                case "done", "failed":
                    let outcome: Result<PreloadProgress, HTTPCacheError> = status.state == "done"
                        ? .success(progress) : .failure(status.failure ?? HTTPCacheError(.upstream, "failed"))
                    bar.end(url, outcome)
                    return outcome
                default:
                    bar.show(progress)
                    usleep(200_000)
                }
            }
        } catch {
            return .failure(error)
        }
    }
}

/// The stderr progress line: bytes, rate, ETA (segments for HLS) on a terminal; else a line per URL.
final class ProgressBar {
    let enabled: Bool
    /// What the plain lines call the work ("preload": "preloading …", "preloaded …").
    private let verb: (doing: String, done: String)
    private var started = ContinuousClock.now

    init(enabled: Bool, verb: (doing: String, done: String) = ("preloading", "preloaded")) {
        self.enabled = enabled
        self.verb = verb
    }

    func begin(_ url: String) {
        started = ContinuousClock.now
        if !enabled { printError("\(verb.doing) \(url)\n") }
    }

    func show(_ p: PreloadProgress) {
        guard enabled else { return }
        let elapsed = max(0.001, started.duration(to: .now) / .seconds(1))
        let rate = Double(p.bytesDone) / elapsed
        let fraction = p.fractionDone
        let width = 24
        let filled = Int(fraction * Double(width))
        let eta = fraction > 0 ? Int(elapsed / fraction - elapsed) : nil
        var line = "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
        let percent = String(Int(fraction * 100))
        line += String(repeating: " ", count: max(0, 3 - percent.count)) + percent + "% "
        line += Self.size(p.bytesDone) + " " + Self.size(Int64(rate)) + "/s"
        if p.segmentsTotal > 0 { line += " segments \(p.segmentsDone)/\(p.segmentsTotal)" }
        line += eta.map { " ETA \($0)s" } ?? ""
        printError(line + "\u{1B}[K")
    }

    func end(_ url: String, _ result: Result<PreloadProgress, HTTPCacheError>) {
        if enabled {
            if case .success(let p) = result { show(p) }
            printError("\n")
        } else if case .success(let p) = result {
            printError("\(verb.done) \(url): \(counted(p.bytesDone, "byte")), \(counted(p.resourcesDone, "resource"))\n")
        }
    }

    static func size(_ bytes: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : oneDecimal(value) + " " + units[unit]
    }
}
