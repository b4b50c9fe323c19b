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

    /// Puts a copy of the complete cached resource at `path` (mode 0600),
    /// off the loop. Never a hard link: writing into or truncating the
    /// export must not change what the cache serves.
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
        resource.users += 1  // not evicted while being copied
        loop.offload({ () -> String? in
            let input = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard input >= 0 else { return "cannot read the cached data of \(path): \(FileIO.errorText())" }
            defer { close(input) }
            return FileIO.copy(input, size: size, to: path) ? nil : "cannot write \(path): \(FileIO.errorText())"
        }, done: { error in
            resource.users -= 1
            completion(error.map { .failure(StorageError($0)) } ?? .success(()))
        })
    }

    /// Makes a copy of a local regular file the complete cached copy of
    /// `url` (stored under `cacheKey`). Everything touching `path` runs off
    /// the loop; a device, FIFO, folder or symlink is refused (EINVAL).
    package func importFile(_ path: String, url: String, cacheKey: String, contentType: String?,
                            completion: @escaping (Result<Void, StorageError>) -> Void) {
        let key = Self.key(for: cacheKey)
        if let existing = resources[key] {
            guard existing.users == 0, !existing.flushing else {
                return completion(.failure(StorageError("\(url) is in use; try again when it is idle", code: EBUSY)))
            }
        }
        let directory = root + "/resources/" + key
        let dataName = "data-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let dataPath = directory + "/" + dataName
        let temp = tempRoot
        let accessed = clock()
        enum Outcome: Sendable {
            case failed(String)
            case done(ResourceMetadata)
        }
        // The source is checked (and the entry replaced) only once it is known to be a regular file.
        loop.offload({ FileIO.openRegularFile(path).map { OpenedFile(fd: $0.fd, size: $0.size) } },
                                  done: { [self] (result: Result<OpenedFile, StorageError>) in
            let source: OpenedFile
            switch result {
            case .failure(let error): return completion(.failure(error))
            case .success(let file): source = file
            }
            if let existing = resources[key] {
                guard existing.users == 0, !existing.flushing else {
                    close(source.fd)
                    return completion(.failure(StorageError("\(url) is in use; try again when it is idle", code: EBUSY)))
                }
                // Its folder is replaced inside the import's own work, in order.
                delete(existing, removingFolder: false)
            }
            var made = ResourceMetadata(url: url, totalLength: source.size, contentType: contentType,
                                        ranges: RangeSet([0..<source.size]), lastAccess: accessed)
            made.dataName = dataName
            let metadata = made
            let encoded = Array(metadata.encoded().utf8)
            loop.offload({ () -> Outcome in
                defer { close(source.fd) }
                FileIO.removeTree(directory)
                guard FileIO.makeDirectory(directory) else {
                    return .failed("cannot create \(directory): \(FileIO.errorText())")
                }
                guard FileIO.copy(source.fd, size: source.size, to: dataPath) else {
                    return .failed("cannot copy \(path): \(FileIO.errorText())")
                }
                guard FileIO.writeAtomically(directory + "/meta", encoded, tempFolder: temp) else {
                    return .failed("cannot write metadata in \(directory)")
                }
                return .done(metadata)
            }, done: { outcome in
                switch outcome {
                case .failed(let error): completion(.failure(StorageError(error)))
                case .done(let metadata):
                    self.adopt(Resource(key: key, directory: directory, metadata: metadata, store: self, hasFolder: true))
                    completion(.success(()))
                }
            })
        })
    }
}

/// A source file opened off the loop, handed back to it.
private struct OpenedFile: Sendable {
    let fd: Int32
    let size: Int64
}
