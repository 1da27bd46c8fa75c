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
        let listing: PluginDirectory
        do {
            listing = try PluginDirectory.read(directory)
        } catch {
            throw .notFound(error.description)
        }
        var types: [PluginType] = []
        var problems = listing.pathsNotUTF8.map(PluginDirectory.skipped)
        for path in listing.paths {
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
