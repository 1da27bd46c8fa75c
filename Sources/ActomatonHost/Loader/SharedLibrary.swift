#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A shared library mapped with `dlopen`, for looking up symbols.
///
/// It is never unmapped: libraries are opened with `RTLD_NODELETE`, because a Swift library
/// registers type metadata with the Swift runtime that cannot be unregistered, and because a
/// plugin's states and manifest must outlive every machine that uses them. Reloading a plugin
/// maps its new version beside the old one.
struct SharedLibrary: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer

    /// Maps the library at `path` (a private copy), resolving every symbol now.
    init(path: String, reportingAs displayPath: String) throws(PluginLoadError) {
        guard let handle = PluginCallMarker.loading(displayPath, { dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) }) else {
            let message = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            // The message names the private copy; name the user's file instead.
            throw PluginLoadError(.notASharedLibrary(message.replacingOccurrences(of: path, with: displayPath)), at: displayPath)
        }
        self.handle = handle
    }

    /// The address of `name`, or `nil` if the library does not export it.
    func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        _ = dlerror()
        return dlsym(handle, name)
    }
}

extension String {
    /// `self` with every occurrence of `target` replaced (no Foundation).
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
