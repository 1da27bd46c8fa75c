import ActomatonHost
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension PluginCatalog {
    /// Loads every `*.so` and `*.wasm` file of `directory` (hidden files skipped), in name
    /// order, as a machine type; returns the catalog and one line per file that could not be
    /// loaded or whose plugin name an earlier file took.
    public static func load(
        directory: String, isolation: PluginIsolation, options: Plugin.LoadOptions
    ) throws(ServiceError) -> (catalog: PluginCatalog, problems: [String]) {
        guard let stream = opendir(directory) else { throw .notFound("\(directory): cannot read the directory") }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".so") || name.hasSuffix(".wasm"), !name.hasPrefix(".") else { continue }
            names.append(name)
        }
        closedir(stream)
        var types: [PluginType] = []
        var problems: [String] = []
        for name in names.sorted() {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            do {
                let type = try PluginType.load(path: path, isolation: isolation, options: options)
                if let earlier = types.first(where: { $0.name == type.name }) {
                    problems.append("\(path): plugin \(type.name) was loaded from \(earlier.path) already; this file is skipped")
                    continue
                }
                types.append(type)
            } catch {
                problems.append(error.description)
            }
        }
        return (PluginCatalog(types), problems)
    }
}
