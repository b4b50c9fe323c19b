import Glibc

/// Cache management: what `httpcache cache …` and the Swift API do.
/// Loop thread only; blocking file copies are offloaded.
extension ResourceStore {
    /// Every entry, most recently used first (the metadata of each read:
    /// this costs a file read per entry, as `cache list` does).
    package func list() -> [CachedResourceInfo] {
        var items: [CachedResourceInfo] = []
        items.reserveCapacity(index.count)
        for record in index.all {
            let key = record.key.hex
            if let resource = resources[key] {
                guard !resource.isTransient else { continue }
                items.append(info(resource.metadata, ranges: resource.available, pinned: resource.isPinned,
                                  inUse: resource.isBusy, complete: resource.isComplete))
            } else if let metadata = storedMetadata(key: key) {
                items.append(info(metadata, ranges: metadata.ranges, pinned: metadata.pin != nil, inUse: false,
                                  complete: metadata.isComplete))
            }
        }
        return items.sorted { ($0.lastAccess, $0.url) > ($1.lastAccess, $1.url) }
    }

    private func info(_ metadata: ResourceMetadata, ranges: RangeSet, pinned: Bool, inUse: Bool,
                      complete: Bool) -> CachedResourceInfo {
        CachedResourceInfo(url: metadata.url, totalLength: metadata.totalLength, contentType: metadata.contentType,
                           cachedBytes: ranges.byteCount, ranges: ranges, lastAccess: metadata.lastAccess,
                           isComplete: complete, inUse: inUse)
    }

    /// The entry for a cache key, else a resource at hand whose recorded URL is `url`.
    package func find(cacheKey: String, url: String) -> Resource? {
        if let resource = existing(storeKey: Self.key(for: cacheKey)), !resource.isTransient { return resource }
        return resources.values.first { $0.url == url && !$0.isTransient }
    }

    /// Removes every entry (those in use once their readers are done). The
    /// files of idle ones are removed on the pool.
    package func removeAll() {
        for resource in Array(resources.values) { remove(resource) }
        var doomed: [String] = []
        for record in index.all {
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: record.key.hex)
            doomed.append(paths.meta)
            doomed.append(paths.data(version: record.version))
        }
        for record in index.all { removeRecord(record.key) }
        let paths = doomed
        loop.offload({ for path in paths { unlink(path) } }, done: { _ in })
    }

    /// Puts the complete cached copy of a resource at `path`: a hard link
    /// when possible (the data file is the resource), else a copy.
    package func export(_ resource: Resource, to path: String,
                        completion: @escaping (Result<Void, StorageError>) -> Void) {
        guard resource.isComplete else {
            let have = resource.available.byteCount
            let total = resource.totalLength.map(String.init) ?? "unknown"
            return completion(.failure(StorageError("\(resource.url) is not completely cached (\(have) of \(total) bytes)",
                                                    code: ERANGE)))
        }
        let source = resource.dataPath
        resource.users += 1  // not evicted while being copied
        loop.offload({ () -> String? in
            unlink(path)
            if link(source, path) == 0 { return nil }
            return FileIO.copyFile(from: source, to: path) ? nil : "cannot write \(path): \(FileIO.errorText())"
        }, done: { error in
            resource.users -= 1
            completion(error.map { .failure(StorageError($0)) } ?? .success(()))
        })
    }

    /// Makes a local file the complete cached copy of `url` (stored under `cacheKey`).
    package func importFile(_ path: String, url: String, cacheKey: String, contentType: String?,
                            completion: @escaping (Result<Void, StorageError>) -> Void) {
        guard let size = FileIO.fileSize(path), !FileIO.isDirectory(path) else {
            return completion(.failure(StorageError("cannot read \(path)", code: ENOENT)))
        }
        let key = Self.key(for: cacheKey)
        var version = 0
        if let existing = existing(storeKey: key) {
            guard existing.users == 0, !existing.flushing else {
                return completion(.failure(StorageError("\(url) is in use; try again when it is idle", code: EBUSY)))
            }
            // A new version: the old one's files go now, the new data file has a name of its own.
            version = (existing.version + 1) & EntryPaths.maxVersion
            delete(existing)
        }
        let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
        var metadata = ResourceMetadata(url: url, totalLength: size, contentType: contentType,
                                        ranges: RangeSet([0..<size]), lastAccess: clock())
        metadata.dataName = EntryPaths.dataName(version: version)
        let dataPath = paths.data(version: version)
        let temp = tempRoot
        let item = MetadataWrite(metadata: metadata, dataPath: dataPath, metaPath: paths.meta)
        let root = self.root
        loop.offload({ () -> String? in
            unlink(dataPath)
            guard link(path, dataPath) == 0 || FileIO.copyFile(from: path, to: dataPath) else {
                return "cannot copy \(path): \(FileIO.errorText())"
            }
            if let failure = MetadataWrite.perform([item], root: root, tempFolder: temp)[0] {
                unlink(dataPath)
                return "cannot write metadata \(paths.meta): \(failure)"
            }
            return nil
        }, done: { error in
            if let error { return completion(.failure(StorageError(error))) }
            self.adopt(Resource(key: key, paths: paths, metadata: metadata, store: self, onDisk: false,
                                route: self.group.route(ofURL: url)))
            completion(.success(()))
        })
    }
}
