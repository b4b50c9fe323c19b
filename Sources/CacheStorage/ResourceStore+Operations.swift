import Glibc

/// Cache management (`httpcache cache …`, the Swift API). Loop thread only; file copies offloaded.
extension ResourceStore {
    /// Every entry, most recently used first, to `done` on the loop. Entries not at hand are read
    /// on the pool (a file each: at a million entries, seconds the loop keeps serving through).
    package func list(_ done: @escaping ([CachedResourceInfo]) -> Void) {
        var items: [CachedResourceInfo] = []
        var stored: [(key: String, lastAccess: Int64, oneFile: Bool, version: Int)] = []
        for record in index.all {
            let key = record.key.hex
            if let resource = resources[key] {
                guard !resource.isTransient else { continue }
                var item = Self.info(resource.metadata, ranges: resource.available, pinned: resource.isPinned,
                                     inUse: resource.isBusy, complete: resource.isComplete)
                item.variant = group.variant(key: key, metadata: resource.metadata)
                items.append(item)
            } else {
                stored.append((key, record.lastAccess, record.isOneFile, record.version))
            }
        }
        let (root, group, wanted) = (resourcesRoot, group, stored)
        loop.offload({
            wanted.compactMap { entry -> CachedResourceInfo? in
                // Invalid ones are skipped here; a lookup forgets them as before.
                guard var metadata = EntryPaths(resourcesRoot: root, key: entry.key)
                        .readMetadata(keys: group.keys, oneFile: entry.oneFile, version: entry.version)?.metadata,
                      !metadata.ranges.isEmpty else { return nil }
                metadata.lastAccess = entry.lastAccess  // the index keeps the LRU order
                var item = Self.info(metadata, ranges: metadata.ranges, pinned: metadata.pin != nil, inUse: false,
                                     complete: metadata.isComplete)
                // On the pool too: it hashes (with the folder's keys) for every entry listed.
                item.variant = group.variant(key: entry.key, metadata: metadata)
                return item
            }
        }, done: { read in
            done((items + read).sorted { ($0.lastAccess, $0.url) > ($1.lastAccess, $1.url) })
        })
    }

    private static func info(_ metadata: ResourceMetadata, ranges: RangeSet, pinned: Bool, inUse: Bool,
                             complete: Bool) -> CachedResourceInfo {
        CachedResourceInfo(url: metadata.url, totalLength: metadata.totalLength, contentType: metadata.contentType,
                           cachedBytes: ranges.byteCount, ranges: ranges, lastAccess: metadata.lastAccess,
                           isComplete: complete, inUse: inUse, isPinned: pinned)
    }

    /// The store key of the entry for forward and reverse requests with other fields (`.forward`).
    package func transparentKey(primary: String) -> String { group.transparentKey(primary: primary) }

    /// Every stored entry of `url`, and the one its cache key names if another (a key ignoring the query).
    package func everyEntry(cacheKey: String, url: String) -> [Resource] {
        var found = entries(ofURL: url)
        if let named = find(cacheKey: cacheKey, url: url), !found.contains(where: { $0 === named }) { found.insert(named, at: 0) }
        return found
    }

    /// The entry for a cache key, else a resource at hand whose recorded URL is `url`.
    package func find(cacheKey: String, url: String) -> Resource? {
        if let resource = existing(storeKey: storeKey(for: cacheKey)), !resource.isTransient { return resource }
        return resources.values.first { $0.url == url && !$0.isTransient }
    }

    /// PURGE of `url`: every stored entry (variants too) goes at once; returns how many.
    package func purge(url: String) -> Int {
        let found = entries(ofURL: url)
        for resource in found { purge(resource) }
        return found.count
    }

    /// Purges every entry whose URL starts with `prefix`; `done` gets how many (reads every URL, as `list`).
    package func purge(prefix: String, _ done: @escaping (Int) -> Void) {
        list { [self] entries in
            let urls = Set(entries.lazy.map(\.url).filter { $0.hasPrefix(prefix) })
            done(urls.reduce(0) { $0 + purge(url: $1) })
        }
    }

    /// Purges every entry `holder` (a download's tag) pins, whoever else does; how many (reads pinned ones).
    package func purge(holder: String) -> Int {
        var urls = Set<String>()
        for record in index.pinned {
            guard let resource = existing(storeKey: record.key.hex), PinHolders.contains(holder, in: resource.metadata.pin)
            else { continue }
            urls.insert(resource.url)
        }
        return urls.reduce(0) { $0 + purge(url: $1) }
    }

    /// Removes every entry (those in use once their readers are done); idle files go on the pool.
    package func removeAll() {
        for resource in Array(resources.values) { remove(resource) }
        var doomed: [String] = []
        for record in index.all {
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: record.key.hex)
            doomed += record.files(paths)
            removeRecord(record.key)
        }
        loop.offload({ [doomed] in for path in doomed { unlink(path) } }, done: { _ in })
    }

    /// Copies the complete cached resource to `path` (mode 0600) off the loop; never a hard link,
    /// so changing the export cannot change what the cache serves.
    package func export(_ resource: Resource, to path: String,
                        completion: @escaping (Result<Void, StorageError>) -> Void) {
        guard resource.isComplete else {
            let have = resource.available.byteCount
            let total = resource.totalLength.map(String.init) ?? "unknown"
            return completion(.failure(StorageError("\(resource.url) is not completely cached (\(have) of \(total) bytes)",
                                                    code: ERANGE)))
        }
        let source = resource.dataPath
        let size = resource.totalLength ?? 0
        // The plaintext goes out: an encrypted file is decrypted on the way (a cipher of its own, off the loop).
        let (keys, key, version) = (group.keys, resource.key, resource.version)
        resource.users += 1  // not evicted while being copied
        loop.offload({ () -> String? in
            let input = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard input >= 0 else { return "cannot read the cached data of \(path): \(FileIO.errorText())" }
            defer { close(input) }
            let decrypting = keys?.cipher(key: key, version: version)
            if keys != nil && decrypting == nil { return "cannot set up decryption of the cached data" }
            return FileIO.copy(input, size: size, to: path, from: decrypting, to: nil) ? nil
                : "cannot write \(path): \(FileIO.errorText())"
        }, done: { error in
            resource.users -= 1
            completion(error.map { .failure(StorageError($0)) } ?? .success(()))
        })
    }

    /// Makes a copy of a local regular file the complete cached copy of `url` (under `cacheKey`),
    /// everything touching `path` off the loop; a device, FIFO, folder or symlink is refused (EINVAL).
    package func importFile(_ path: String, url: String, cacheKey: String, contentType: String?,
                            completion: @escaping (Result<Void, StorageError>) -> Void) {
        let key = storeKey(for: cacheKey)
        let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
        let (root, temp, accessed) = (self.root, tempRoot, clock())
        enum Outcome: Sendable {
            case failed(String)
            case done(ResourceMetadata, oneFile: Bool)
        }
        // The source is checked (and the entry replaced) only once it is known to be a regular file.
        loop.offload({ FileIO.openRegularFile(path) },
                     done: { [self] (result: Result<(fd: Int32, size: Int64), StorageError>) in
            let source: (fd: Int32, size: Int64)
            do throws(StorageError) { source = try result.get() } catch { return completion(.failure(error)) }
            var version = 0
            if let existing = existing(storeKey: key) {
                guard existing.users == 0, !existing.flushing else {
                    close(source.fd)
                    return completion(.failure(StorageError("\(url) is in use; try again when it is idle", code: EBUSY)))
                }
                // A new version: the old one's files go now, the new data file has a name of its own.
                version = (existing.version + 1) & EntryPaths.maxVersion
                delete(existing)
            }
            var made = ResourceMetadata(url: url, totalLength: source.size, contentType: contentType,
                                        ranges: RangeSet([0..<source.size]), lastAccess: accessed)
            made.dataName = EntryPaths.dataName(version: version)
            let metadata = made
            let dataPath = paths.data(version: version)
            let (keys, fileVersion, folders) = (group.keys, version, group.folders)
            let item = MetadataWrite(metadata: metadata, dataPath: dataPath, metaPath: paths.meta, keys: keys, key: key,
                                     attribute: group.usesAttributes)
            loop.offload({ () -> Outcome in
                defer { close(source.fd) }
                guard folders.prepare(paths) else { return .failed("cannot create the folder of \(dataPath): \(FileIO.errorText())") }
                unlink(dataPath)
                // In an encrypted folder the copy is encrypted on the way in.
                let encrypting = keys?.cipher(key: key, version: fileVersion)
                guard keys == nil || encrypting != nil,
                      FileIO.copy(source.fd, size: source.size, to: dataPath, from: nil, to: encrypting) else {
                    return .failed("cannot copy \(path): \(FileIO.errorText())")
                }
                // Not in the index yet: a refused attribute becomes a `.meta` file at once.
                let written = MetadataWrite.performFallingBack([item], root: root, tempFolder: temp)[0]
                if let failure = written.outcome.failure {
                    unlink(dataPath)
                    return .failed("cannot write metadata \(paths.meta): \(failure)")
                }
                return .done(metadata, oneFile: written.oneFile)
            }, done: { outcome in
                switch outcome {
                case .failed(let error): completion(.failure(StorageError(error)))
                case .done(let metadata, let oneFile):
                    self.adopt(Resource(key: key, paths: paths, metadata: metadata, store: self, onDisk: false,
                                        route: self.group.route(ofURL: url), oneFile: oneFile))
                    completion(.success(()))
                }
            })
        })
    }
}


extension StoreGroup {
    /// Which entry of its URL the one under store key `key` is. Any thread.
    func variant(key: String, metadata: ResourceMetadata) -> EntryVariant {
        let primary = primaryKey(ofURL: metadata.url)
        if key == primary { return .primary }
        if key == transparentKey(primary: primary) { return .forward }
        return metadata.head?.varyKey != nil ? .vary : .encoding
    }

    func transparentKey(primary: String) -> String { key(for: primary + "\ntransparent request") }
}
