import CacheStorage
import Glibc

/// A configuration file of `httpcache serve` (`--config FILE`; the packaged service reads
/// `/etc/httpcache/httpcache.conf`): a setting a line, named as the long options, set through
/// `ServeSettings.set` like a flag.
///
///     # comments start a line; blank lines are skipped
///     max-cache-size = 20GB
///     allow-origin = media.example.com      # not a comment: no inline comments (URLs carry '#')
///     allow-origin = cdn.example.com        (repeatable options are repeated)
///     header = "Authorization: Bearer x"    (optional double quotes keep outer spaces)
///     insecure                              (a flag alone means true)
///
/// Every error names the file, the line and the reason.
public struct ConfigFile: Sendable {
    /// One `name = value` line.
    public struct Setting: Sendable, Equatable {
        public var line: Int
        public var name: String
        public var value: String
    }

    public let path: String
    public let settings: [Setting]

    /// Reads and parses `path` (a symlink is followed): `.io` when unreadable; `.invalidArgument`
    /// ("FILE:LINE: reason") for a line no option takes, and for a file others could have changed
    /// (writable by others, or in such a folder; another user's but root's; not a regular file).
    public static func read(path: String) throws(HTTPCacheError) -> ConfigFile {
        try parse(text(path: path), path: path)
    }

    private static func text(path: String) throws(HTTPCacheError) -> String {
        let bytes: [UInt8]
        do throws(StorageError) {
            // A configuration is small: a huge file is a mistake (a log named instead).
            bytes = try TrustedFile.read(path, what: "configuration file", maxBytes: 1 << 20, secret: false, code: EINVAL,
                                         openCode: EIO, followsLinks: true)
        } catch {
            throw HTTPCacheError(error.code == EINVAL ? .invalidArgument : .io, error.description)
        }
        if let problem = TrustedFile.folderProblem(of: path, what: "configuration file") {
            throw HTTPCacheError(.invalidArgument, problem)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses a configuration file's text (syntax, option names); the error names every wrong line.
    public static func parse(_ text: String, path: String) throws(HTTPCacheError) -> ConfigFile {
        let (file, problems) = parseAll(text, path: path)
        if let error = combined(problems) { throw error }
        return file
    }

    /// Every problem of the file, syntax and values, in line order ("FILE:LINE: reason"), as
    /// `settings` would meet them: what `httpcache check-config` reports, all at once.
    public static func problems(path: String, applyingTo settings: ServeSettings) throws(HTTPCacheError) -> (file: ConfigFile, problems: [String]) {
        let (file, syntax) = parseAll(try text(path: path), path: path)
        var changed = settings
        let values = file.set(on: &changed)
        return (file, (syntax + values).sorted { $0.line < $1.line }.map(\.text))
    }

    struct Problem {
        var line: Int
        var text: String
    }

    /// One error naming every problem, one a line; nil for none.
    private static func combined(_ problems: [Problem]) -> HTTPCacheError? {
        guard !problems.isEmpty else { return nil }
        return HTTPCacheError(.invalidArgument, problems.map(\.text).joined(separator: "\n"))
    }

    /// The settings, and a problem for each line that is not one (parsing goes on, naming all).
    static func parseAll(_ text: String, path: String) -> (file: ConfigFile, problems: [Problem]) {
        var settings: [Setting] = []
        var problems: [Problem] = []
        var firstLine: [String: Int] = [:]
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            func fail(_ reason: String) { problems.append(Problem(line: number, text: "\(path):\(number): \(reason)")) }
            let line = raw.trimming(" \t")
            if line.isEmpty || line.hasPrefix("#") { continue }
            let name: String
            var value: Substring
            if let equals = line.firstIndex(of: "=") {
                name = String(line[..<equals].trimming(" \t"))
                value = line[line.index(after: equals)...].trimming(" \t")
                if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            } else {
                name = String(line)
                value = ""
            }
            guard let option = ServeOption.named(name) else {
                fail(name.contains(" ") ? "expected NAME = VALUE" : "unknown option \(name)")
                continue
            }
            if value.isEmpty {
                // A flag alone is set; any other option needs its value.
                guard option.valueName.isEmpty, !line.contains("=") else {
                    fail("\(name) needs a value")
                    continue
                }
                value = "true"
            }
            if !option.isRepeatable, let first = firstLine[name] {
                fail("\(name) is already set on line \(first) (only repeatable options are repeated)")
                continue
            }
            firstLine[name] = firstLine[name] ?? number
            settings.append(Setting(line: number, name: name, value: String(value)))
        }
        return (ConfigFile(path: path, settings: settings), problems)
    }

    /// Sets every setting in file order; nothing changes when one is refused ("FILE:LINE: reason" each).
    public func apply(to settings: inout ServeSettings) throws(HTTPCacheError) {
        var changed = settings
        if let error = Self.combined(set(on: &changed)) { throw error }
        settings = changed
    }

    /// Sets every setting it can on `settings`, in file order; a problem for each refused one.
    private func set(on settings: inout ServeSettings) -> [Problem] {
        var problems: [Problem] = []
        for setting in self.settings {
            do throws(HTTPCacheError) {
                try settings.set(setting.name, setting.value)
            } catch {
                problems.append(Problem(line: setting.line, text: "\(path):\(setting.line): \(error.message)"))
            }
        }
        return problems
    }
}
