import CacheIO
import CacheStorage
import Glibc

/// The downloads' records: `downloads/<id>`, one `name value` a line (no JSON on the
/// server path), replaced by a rename so a crash leaves the old or the new one; sealed
/// in an encrypted folder (a record names its URL). The manager's loop only.
package struct DownloadFolder: Sendable {
    package let path: String
    /// The cache folder's `tmp` (emptied when the folder is opened): a temp file left by a crash goes there.
    private let tempFolder: String
    private let keys: FolderKeys?

    package init(cacheDirectory: String, keys: FolderKeys? = nil) {
        path = cacheDirectory + "/downloads"
        tempFolder = cacheDirectory + "/tmp"
        self.keys = keys
    }

    /// Every record in the folder; unreadable files are skipped (a crash mid-write leaves only temp files).
    package func load() -> [DownloadRecord] {
        FileIO.listDirectory(path).compactMap { name in
            // `.tmp`: left by an older release's interrupted write.
            guard !name.hasPrefix("."), !name.hasSuffix(".tmp"), let bytes = Self.read(path + "/" + name),
                  let text = opened(bytes, id: name), let record = Self.decode(text), record.id == name else { return nil }
            return record
        }.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
    }

    /// Replaces the record whole (temp file in the cache folder's `tmp`, synced, renamed):
    /// after a crash the old record or the new one is there, never a torn one.
    package func save(_ record: DownloadRecord) throws(HTTPCacheError) {
        mkdir(path, 0o700)
        mkdir(tempFolder, 0o700)
        let plain = Array(Self.encode(record).utf8)
        guard let bytes = keys.map({ $0.seal(plain, context: FolderKeys.downloadContext(record.id)) }) ?? plain else {
            throw HTTPCacheError(.io, "cannot seal the record of download \(record.id)")
        }
        let final = path + "/" + record.id
        guard FileIO.writeAtomically(final, bytes, tempFolder: tempFolder) else {
            throw HTTPCacheError(.io, "cannot write \(final): \(FileIO.errorText())")
        }
    }

    package func delete(_ id: String) { unlink(path + "/" + id) }

    /// A record's text: unsealed in an encrypted folder (nil when it does not open).
    private func opened(_ bytes: [UInt8], id: String) -> String? {
        guard let keys else { return String(validating: bytes, as: UTF8.self) }
        return keys.open(bytes, context: FolderKeys.downloadContext(id)).flatMap { String(validating: $0, as: UTF8.self) }
    }

    static func read(_ file: String) -> [UInt8]? { FileIO.readAll(file, limit: 1 << 20) }

    /// One `name value` a line; values have no line breaks (names are flattened).
    static func encode(_ r: DownloadRecord) -> String {
        var lines = ["id \(r.id)", "name \(flat(r.name))", "url \(flat(r.url))", "state \(r.state.rawValue)", "created \(r.created)",
                     "bytesDone \(r.bytesDone)", "estimate \(r.totalIsEstimate)",
                     "resources \(r.resourcesDone) \(r.resourcesTotal)", "segments \(r.segmentsDone) \(r.segmentsTotal)"]
        if let variant = r.variant { lines.append("variant \(flat(variant))") }
        if let duration = r.duration { lines.append("duration \(duration)") }
        if let range = r.range { lines.append("range \(flat(range))") }
        if let total = r.bytesTotal { lines.append("bytesTotal \(total)") }
        if let failure = r.failure { lines.append("failure \(failure.code.rawValue) \(flat(failure.message))") }
        return lines.joined(separator: "\n") + "\n"
    }

    static func decode(_ text: String) -> DownloadRecord? {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            fields[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        guard let id = fields["id"], !id.isEmpty, let url = fields["url"], let created = fields["created"].flatMap({ Int64($0) }),
              let state = fields["state"].flatMap(DownloadRecord.State.init(rawValue:)) else { return nil }
        var record = DownloadRecord(id: id, name: fields["name"] ?? url, url: url, variant: fields["variant"],
                                    duration: fields["duration"].flatMap { Double($0) }, range: fields["range"], created: created)
        record.state = state
        record.bytesDone = fields["bytesDone"].flatMap { Int64($0) } ?? 0
        record.bytesTotal = fields["bytesTotal"].flatMap { Int64($0) }
        record.totalIsEstimate = fields["estimate"] == "true"
        let pair = { (name: String) -> (Int, Int) in
            let numbers = (fields[name] ?? "").split(separator: " ").compactMap { Int($0) }
            return numbers.count == 2 ? (numbers[0], numbers[1]) : (0, 0)
        }
        (record.resourcesDone, record.resourcesTotal) = pair("resources")
        (record.segmentsDone, record.segmentsTotal) = pair("segments")
        if let failure = fields["failure"] {
            let parts = failure.split(separator: " ", maxSplits: 1)
            let code = parts.first.flatMap { Int32($0) }.flatMap(HTTPCacheError.Code.init(rawValue:)) ?? .upstream
            record.failure = HTTPCacheError(code, parts.count > 1 ? String(parts[1]) : code.text)
        }
        return record
    }

    private static func flat(_ text: String) -> String {
        String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
