import CacheStorage
import Glibc

/// A configuration file of `httpcache serve` (`--config FILE`; the packaged
/// service reads `/etc/httpcache/httpcache.conf`): one setting a line, named
/// as the long options of `ServeOption.all`, set through `ServeSettings.set`
/// like a command-line flag.
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

    /// Reads and parses `path`; `.io` when it cannot be read, `.invalidArgument`
    /// ("FILE:LINE: reason") for a line that is not a setting of a known option,
    /// and for a file others could have changed (`TrustedFile`): one
    /// writable by group or others, in a folder writable by them, of another
    /// user's (root's is trusted: a packaged /etc file), or not a regular
    /// file (a FIFO is refused, never waited on). A symbolic link is followed.
    public static func read(path: String) throws(HTTPCacheError) -> ConfigFile {
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
        return try parse(String(decoding: bytes, as: UTF8.self), path: path)
    }

    /// Parses the text of a configuration file (syntax and option names).
    public static func parse(_ text: String, path: String) throws(HTTPCacheError) -> ConfigFile {
        var settings: [Setting] = []
        var firstLine: [String: Int] = [:]
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            func fail(_ reason: String) -> HTTPCacheError { HTTPCacheError(.invalidArgument, "\(path):\(number): \(reason)") }
            let line = trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let name: String
            var value: Substring
            if let equals = line.firstIndex(of: "=") {
                name = String(trimmed(line[..<equals]))
                value = trimmed(line[line.index(after: equals)...])
                if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            } else {
                name = String(line)
                value = ""
            }
            guard let option = ServeOption.named(name) else {
                throw fail(name.contains(" ") ? "expected NAME = VALUE" : "unknown option \(name)")
            }
            if value.isEmpty {
                // A flag alone is set; any other option needs its value.
                guard option.valueName.isEmpty, !line.contains("=") else { throw fail("\(name) needs a value") }
                value = "true"
            }
            if !option.isRepeatable, let first = firstLine[name] {
                throw fail("\(name) is already set on line \(first) (only repeatable options are repeated)")
            }
            firstLine[name] = firstLine[name] ?? number
            settings.append(Setting(line: number, name: name, value: String(value)))
        }
        return ConfigFile(path: path, settings: settings)
    }

    /// Sets every setting in file order, each checked by `ServeOption`;
    /// nothing changes when one is refused ("FILE:LINE: reason").
    public func apply(to settings: inout ServeSettings) throws(HTTPCacheError) {
        var changed = settings
        for setting in self.settings {
            do throws(HTTPCacheError) {
                try changed.set(setting.name, setting.value)
            } catch {
                throw HTTPCacheError(.invalidArgument, "\(path):\(setting.line): \(error.message)")
            }
        }
        settings = changed
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
