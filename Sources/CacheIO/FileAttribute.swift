import CSupport
import Glibc

/// Extended attributes of files (see `cs_fsetxattr`): blocking, for pool threads.
package enum FileAttribute {
    /// Replaces the whole value of `name` on the open file; false with errno set when refused.
    package static func set(_ fd: Int32, name: String, _ value: UnsafeRawBufferPointer) -> Bool {
        cs_fsetxattr(fd, name, value.baseAddress, value.count) == 0
    }

    /// Reads the value of `name` into `buffer` (an empty buffer asks its length):
    /// the length, or -1 with errno set (ENODATA: none; ERANGE: the buffer is too small).
    package static func get(_ fd: Int32, name: String, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        cs_fgetxattr(fd, name, buffer.baseAddress, buffer.count)
    }

    /// Removes `name` from the file at `path` (never through a symlink).
    package static func remove(path: String, name: String) -> Bool { cs_lremovexattr(path, name) == 0 }
}
