import Glibc

/// Cache management: what `httpcache cache …` and the Swift API do.
/// Loop thread only; blocking file copies are offloaded.
extension ResourceStore {
    /// Every entry, most recently used first.
    package func list() -> [CachedResourceInfo] {
        resources.values.filter { !$0.isTransient }.map { resource in
            CachedResourceInfo(url: resource.url, totalLength: resource.totalLength,
                               contentType: resource.metadata.contentType,
                               cachedBytes: resource.available.byteCount, ranges: resource.available,
                               lastAccess: resource.metadata.lastAccess, isComplete: resource.isComplete,
                               inUse: resource.isBusy)
        }.sorted { ($0.lastAccess, $0.url) > ($1.lastAccess, $1.url) }
    }

    /// The entry for a cache key, else the entry whose recorded URL is `url`.
    package func find(cacheKey: String, url: String) -> Resource? {
        if let resource = resources[Self.key(for: cacheKey)], !resource.isTransient { return resource }
        return resources.values.first { $0.url == url && !$0.isTransient }
    }

    /// Removes every entry (those in use once their readers are done).
    package func removeAll() {
        for resource in Array(resources.values) { remove(resource) }
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
        if let existing = resources[key] {
            guard existing.users == 0, !existing.flushing else {
                return completion(.failure(StorageError("\(url) is in use; try again when it is idle", code: EBUSY)))
            }
            // Its folder is replaced inside the import's own work, in order.
            delete(existing, removingFolder: false)
        }
        let directory = root + "/resources/" + key
        var metadata = ResourceMetadata(url: url, totalLength: size, contentType: contentType,
                                        ranges: RangeSet([0..<size]), lastAccess: clock())
        metadata.dataName = "data-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let dataPath = directory + "/" + metadata.dataName
        let temp = tempRoot
        let encoded = Array(metadata.encoded().utf8)
        loop.offload({ () -> String? in
            FileIO.removeTree(directory)
            guard FileIO.makeDirectory(directory) else { return "cannot create \(directory): \(FileIO.errorText())" }
            guard link(path, dataPath) == 0 || FileIO.copyFile(from: path, to: dataPath) else {
                return "cannot copy \(path): \(FileIO.errorText())"
            }
            guard FileIO.writeAtomically(directory + "/meta", encoded, tempFolder: temp) else {
                return "cannot write metadata in \(directory)"
            }
            return nil
        }, done: { error in
            if let error { return completion(.failure(StorageError(error))) }
            self.adopt(Resource(key: key, directory: directory, metadata: metadata, store: self, hasFolder: true))
            completion(.success(()))
        })
    }
}
