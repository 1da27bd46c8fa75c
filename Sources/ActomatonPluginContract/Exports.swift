@_exported import ActomatonPluginCore
