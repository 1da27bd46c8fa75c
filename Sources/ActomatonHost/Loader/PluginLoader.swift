import ActomatonPluginContract
import ActomatonPluginABI
import ActomatonFFI
import CFFI

/// Loads one plugin file, step by step, as an explicit state machine.
///
///     ┌───────┐ copyFile ┌────────┐ openLibrary ┌────────┐ findEntry ┌────────────┐
///     │ start │────────▶│ copied │───────────▶│ opened │─────────▶│ entryFound │
///     └───────┘          └────────┘             └────────┘           └────────────┘
///                                                                         │ readManifest (ABI version first)
///     ┌───────┐ prepareCalls ┌───────────┐       validateManifest ┌──────────────┐
///     │ ready │◀────────────│ validated │◀───────────────────────│ manifestRead │
///     └───────┘              └───────────┘                         └──────────────┘
///
/// Any step that fails moves to `failed` with the error, which ``run()`` throws. Nothing the
/// plugin hands over is trusted before the step that checks it: the ABI version is read
/// before the rest of the manifest, and the manifest is validated before any libffi call
/// interface is prepared from it.
struct PluginLoader {
    private enum State {
        case start
        case copied(privatePath: String, identity: FileIdentity)
        case opened(SharedLibrary, identity: FileIdentity)
        case entryFound(actomaton_plugin_entry_fn, library: SharedLibrary, identity: FileIdentity)
        case manifestRead(UnsafePointer<actomaton_manifest>, library: SharedLibrary, identity: FileIdentity)
        case validated(PluginManifest, UnsafePointer<actomaton_manifest>, library: SharedLibrary, identity: FileIdentity)
        case ready(Plugin)
        case failed(PluginLoadError)
    }

    private let path: String
    private let options: Plugin.LoadOptions
    private var state = State.start

    init(path: String, options: Plugin.LoadOptions) {
        self.path = path
        self.options = options
    }

    /// Runs every step and returns the plugin, or throws the first step's error.
    mutating func run() throws(PluginLoadError) -> Plugin {
        while true {
            switch state {
            case .start: copyFile()
            case .copied: openLibrary()
            case .opened: findEntry()
            case .entryFound: readManifest()
            case .manifestRead: validateManifest()
            case .validated: prepareCalls()
            case let .ready(plugin): return plugin
            case let .failed(error): throw error
            }
        }
    }

    // MARK: Transitions

    /// start → copied: vets the file (see `PluginFile`: trusted owner and directories, a regular
    /// file, within the size limit, an ELF shared library) and copies it.
    private mutating func copyFile() {
        guard case .start = state else { preconditionFailure("copyFile from \(state)") }
        do {
            let (copy, identity) = try PluginFile.makePrivateCopy(of: path, options: options)
            state = .copied(privatePath: copy, identity: identity)
        } catch {
            state = .failed(error)
        }
    }

    /// copied → opened: maps the private copy, then unlinks it.
    private mutating func openLibrary() {
        guard case let .copied(privatePath, identity) = state else { preconditionFailure("openLibrary from \(state)") }
        defer { PluginFile.removePrivateCopy(privatePath) }
        do {
            state = .opened(try SharedLibrary(path: privatePath, reportingAs: path), identity: identity)
        } catch {
            state = .failed(error)
        }
    }

    /// opened → entryFound: looks up the entry symbol.
    private mutating func findEntry() {
        guard case let .opened(library, identity) = state else { preconditionFailure("findEntry from \(state)") }
        guard let symbol = library.symbol(options.entrySymbol) else {
            state = .failed(PluginLoadError(.missingEntrySymbol(options.entrySymbol), at: path))
            return
        }
        state = .entryFound(unsafeBitCast(symbol, to: actomaton_plugin_entry_fn.self), library: library, identity: identity)
    }

    /// entryFound → manifestRead: calls the entry and checks the ABI version, reading nothing else.
    private mutating func readManifest() {
        guard case let .entryFound(entry, library, identity) = state else { preconditionFailure("readManifest from \(state)") }
        // Marked as loading the file: a crash in the entry is said to be the file's.
        guard let manifest = PluginCallMarker.loading(path, { entry(ManifestReader.supportedABIVersion) }) else {
            state = .failed(PluginLoadError(.noManifest, at: path))
            return
        }
        do {
            try ManifestReader.checkABIVersion(UnsafeRawPointer(manifest))
            state = .manifestRead(manifest, library: library, identity: identity)
        } catch {
            state = .failed(PluginLoadError(.manifest(error), at: path))
        }
    }

    /// manifestRead → validated: reads and checks the rest of the manifest.
    private mutating func validateManifest() {
        guard case let .manifestRead(pointer, library, identity) = state else { preconditionFailure("validateManifest from \(state)") }
        do {
            // The manifest is the plugin's memory, which a bad count makes the host read past:
            // a crash there is said to be the file's too.
            let read = PluginCallMarker.loading(path) { Result { () throws(PluginManifestError) in try ManifestReader.read(pointer) } }
            state = .validated(try read.get(), pointer, library: library, identity: identity)
        } catch {
            state = .failed(PluginLoadError(.manifest(error), at: path))
        }
    }

    /// validated → ready: prepares one libffi call interface per action.
    private mutating func prepareCalls() {
        guard case let .validated(manifest, pointer, _, identity) = state else { preconditionFailure("prepareCalls from \(state)") }
        let raw = ManifestReader.fields(of: pointer)
        var prepared: [PreparedAction] = []
        for (index, action) in manifest.actions.enumerated() {
            let types = action.parameters.map(\.type)
            guard let interface = CallInterface(returning: cffi_type_sint32(),
                                                arguments: [cffi_type_pointer()] + types.map(\.ffiType))
            else {
                state = .failed(PluginLoadError(.libffi("cannot prepare a call interface for \(action)"), at: path))
                return
            }
            prepared.append(PreparedAction(interface: interface, entry: raw.actions[index].entry!, parameterTypes: types))
        }
        let functions = LifecycleFunctions(create: raw.create!, destroy: raw.destroy!, snapshot: raw.snapshot!,
                                           restore: raw.restore!, describe: raw.describe!, active: raw.active)
        state = .ready(Plugin(path: path, manifest: manifest, fileIdentity: identity, code: .native(actions: prepared, functions: functions)))
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
