import CSupport
import Glibc

/// Extended attributes (`cs_fsetxattr`): blocking, for pool threads.
package enum FileAttribute {
    /// The whole value; false with errno set when refused.
    package static func set(_ fd: Int32, name: String, _ value: UnsafeRawBufferPointer) -> Bool {
        cs_fsetxattr(fd, name, value.baseAddress, value.count) == 0
    }

    /// The length (an empty buffer asks it), or -1 with errno (ENODATA: none; ERANGE: too small).
    package static func get(_ fd: Int32, name: String, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        cs_fgetxattr(fd, name, buffer.baseAddress, buffer.count)
    }

    /// Never through a symlink.
    package static func remove(path: String, name: String) -> Bool { cs_lremovexattr(path, name) == 0 }
}
