//! The imports husk provides, and linking a component to exactly the ones it
//! names: one linker per set of interfaces.
//!
//! husk provides its own `husk:worker/log` and `husk:worker/types` (at
//! 0.1.x) and the WASI 0.2 interfaces of `wasi:cli/imports` that
//! wasmtime-wasi implements (`wasi:io`, `wasi:clocks`, `wasi:random`,
//! `wasi:cli`, `wasi:filesystem`, `wasi:sockets`; at 0.2.x). A plugin's
//! linker holds only the interfaces its component imports; every WASI
//! capability behind them is denied by the job's context (see `state`): no
//! preopened directories, no environment, no arguments, no network.
//!
//! Two more are capabilities a topic grants (see `capability`):
//! `wasi:http/outgoing-handler` and `wasi:http/types` (at 0.2.x) for a topic
//! with `allowed_hosts`, `wasi:config/store` (at 0.2.0-rc.1, the version
//! wasmtime-wasi-config implements) for a topic with config. A topic that
//! does not grant them refuses a component importing them.
//!
//! A component importing anything else, an interface at an incompatible
//! version, or one with no version, is refused at load with the import named
//! as the component wrote it.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use wasmtime::component::{Component, HasData, HasSelf, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView as _};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings;
use wasmtime_wasi::random::{WasiRandom, WasiRandomView as _};
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView as _};
#[cfg(feature = "http")]
use wasmtime_wasi_http::p2::bindings::sync::http;
#[cfg(feature = "http")]
use wasmtime_wasi_http::{WasiHttp, WasiHttpView as _};

use crate::bindings::operation::husk::worker::{log, types};
use crate::capability::Grants;
use crate::guest::{BoundedIo, JobState};

/// Adds one interface to a linker.
type Add = fn(&mut Linker<JobState>) -> wasmtime::Result<()>;

/// A package family, and the versions of it husk provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `husk:worker`, at 0.1.x.
    Husk,
    /// WASI, at 0.2.x.
    Wasi,
    /// `wasi:http`, at 0.2.x, for a topic granting outbound HTTP.
    #[cfg_attr(not(feature = "http"), allow(dead_code, reason = "provided with the `http` feature only"))]
    Http,
    /// `wasi:config`, at 0.2.0-rc.1 only, for a topic granting config.
    Config,
}

/// The one version of `wasi:config` husk provides.
const CONFIG_VERSION: &str = "0.2.0-rc.1";

impl Family {
    /// The `major.minor` of the versions husk provides (any patch).
    fn major_minor(self) -> (u64, u64) {
        match self {
            Family::Husk => (0, 1),
            Family::Wasi | Family::Http | Family::Config => (0, 2),
        }
    }

    /// Whether `version` (as an import writes it) is one husk provides.
    fn accepts(self, version: &str) -> bool {
        match self {
            Family::Config => version == CONFIG_VERSION,
            _ => major_minor(version) == Some(self.major_minor()),
        }
    }

    /// The versions husk provides, for error messages.
    fn versions(self) -> String {
        match self {
            Family::Config => CONFIG_VERSION.to_owned(),
            _ => {
                let (major, minor) = self.major_minor();
                format!("{major}.{minor}.x")
            }
        }
    }

    /// Why `grants` do not let a component import this family; `None` when
    /// they do.
    fn denied(self, grants: &Grants) -> Option<&'static str> {
        match self {
            Family::Http if grants.http.is_none() => Some(
                "which its topic does not grant: outbound HTTP needs the topic's `allowed_hosts` (`husk run --allow-host`)",
            ),
            Family::Config if grants.config.is_none() => Some(
                "which its topic does not grant: `wasi:config` needs the topic's `config` or `secrets` (`husk run --config`)",
            ),
            _ => None,
        }
    }
}

/// One interface husk provides: its name without a version, and how to link
/// it.
struct Provided {
    name: &'static str,
    family: Family,
    add: Add,
}

/// `HasData` for `wasi:io/error`, whose host state is the resource table.
struct HasTable;

impl HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}

/// `HasData` for `wasi:io/poll` and `wasi:io/streams`: the resource table
/// and the job's bound.
struct HasBoundedIo;

impl HasData for HasBoundedIo {
    type Data<'a> = BoundedIo<'a>;
}

/// Every interface husk provides, sorted by name. The `add` functions are
/// those `wasmtime_wasi::p2::add_to_linker_with_options_sync` calls, one
/// interface each, but for `wasi:io/poll` and `wasi:io/streams`, the calls
/// a guest can wait in, which are husk's own, bounded by the job's deadline
/// and cancel (see `waits`).
const PROVIDED: &[Provided] = &[
    Provided { name: "husk:worker/log", family: Family::Husk, add: |l| log::add_to_linker::<_, HasSelf<_>>(l, |s| s) },
    Provided {
        name: "husk:worker/types",
        family: Family::Husk,
        add: |l| types::add_to_linker::<_, HasSelf<_>>(l, |s| s),
    },
    Provided {
        name: "wasi:cli/environment",
        family: Family::Wasi,
        add: |l| bindings::cli::environment::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/exit",
        family: Family::Wasi,
        add: |l| bindings::cli::exit::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/stderr",
        family: Family::Wasi,
        add: |l| bindings::cli::stderr::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/stdin",
        family: Family::Wasi,
        add: |l| bindings::cli::stdin::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/stdout",
        family: Family::Wasi,
        add: |l| bindings::cli::stdout::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/terminal-input",
        family: Family::Wasi,
        add: |l| bindings::cli::terminal_input::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/terminal-output",
        family: Family::Wasi,
        add: |l| bindings::cli::terminal_output::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/terminal-stderr",
        family: Family::Wasi,
        add: |l| bindings::cli::terminal_stderr::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/terminal-stdin",
        family: Family::Wasi,
        add: |l| bindings::cli::terminal_stdin::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:cli/terminal-stdout",
        family: Family::Wasi,
        add: |l| bindings::cli::terminal_stdout::add_to_linker::<_, WasiCli>(l, JobState::cli),
    },
    Provided {
        name: "wasi:clocks/monotonic-clock",
        family: Family::Wasi,
        add: |l| bindings::clocks::monotonic_clock::add_to_linker::<_, WasiClocks>(l, JobState::clocks),
    },
    Provided {
        name: "wasi:clocks/wall-clock",
        family: Family::Wasi,
        add: |l| bindings::clocks::wall_clock::add_to_linker::<_, WasiClocks>(l, JobState::clocks),
    },
    Provided {
        name: "wasi:config/store",
        family: Family::Config,
        add: |l| wasmtime_wasi_config::add_to_linker(l, JobState::config),
    },
    Provided {
        name: "wasi:filesystem/preopens",
        family: Family::Wasi,
        add: |l| bindings::filesystem::preopens::add_to_linker::<_, WasiFilesystem>(l, JobState::filesystem),
    },
    Provided {
        name: "wasi:filesystem/types",
        family: Family::Wasi,
        add: |l| bindings::sync::filesystem::types::add_to_linker::<_, WasiFilesystem>(l, JobState::filesystem),
    },
    #[cfg(feature = "http")]
    Provided {
        name: "wasi:http/outgoing-handler",
        family: Family::Http,
        add: |l| http::outgoing_handler::add_to_linker::<_, WasiHttp>(l, JobState::http),
    },
    #[cfg(feature = "http")]
    Provided {
        name: "wasi:http/types",
        family: Family::Http,
        add: |l| {
            let options = wasmtime_wasi_http::p2::bindings::LinkOptions::default();
            http::types::add_to_linker::<_, WasiHttp>(l, &options.into(), JobState::http)
        },
    },
    Provided {
        name: "wasi:io/error",
        family: Family::Wasi,
        add: |l| bindings::io::error::add_to_linker::<_, HasTable>(l, JobState::table),
    },
    Provided {
        name: "wasi:io/poll",
        family: Family::Wasi,
        add: |l| bindings::sync::io::poll::add_to_linker::<_, HasBoundedIo>(l, JobState::bounded_io),
    },
    Provided {
        name: "wasi:io/streams",
        family: Family::Wasi,
        add: |l| bindings::sync::io::streams::add_to_linker::<_, HasBoundedIo>(l, JobState::bounded_io),
    },
    Provided {
        name: "wasi:random/insecure",
        family: Family::Wasi,
        add: |l| bindings::random::insecure::add_to_linker::<_, WasiRandom>(l, JobState::random),
    },
    Provided {
        name: "wasi:random/insecure-seed",
        family: Family::Wasi,
        add: |l| bindings::random::insecure_seed::add_to_linker::<_, WasiRandom>(l, JobState::random),
    },
    Provided {
        name: "wasi:random/random",
        family: Family::Wasi,
        add: |l| bindings::random::random::add_to_linker::<_, WasiRandom>(l, JobState::random),
    },
    Provided {
        name: "wasi:sockets/instance-network",
        family: Family::Wasi,
        add: |l| bindings::sockets::instance_network::add_to_linker::<_, WasiSockets>(l, JobState::sockets),
    },
    Provided {
        name: "wasi:sockets/ip-name-lookup",
        family: Family::Wasi,
        add: |l| bindings::sockets::ip_name_lookup::add_to_linker::<_, WasiSockets>(l, JobState::sockets),
    },
    Provided {
        name: "wasi:sockets/network",
        family: Family::Wasi,
        add: |l| {
            let options = bindings::sockets::network::LinkOptions::default();
            bindings::sockets::network::add_to_linker::<_, WasiSockets>(l, &options, JobState::sockets)
        },
    },
    Provided {
        name: "wasi:sockets/tcp",
        family: Family::Wasi,
        add: |l| bindings::sync::sockets::tcp::add_to_linker::<_, WasiSockets>(l, JobState::sockets),
    },
    Provided {
        name: "wasi:sockets/tcp-create-socket",
        family: Family::Wasi,
        add: |l| bindings::sockets::tcp_create_socket::add_to_linker::<_, WasiSockets>(l, JobState::sockets),
    },
    Provided {
        name: "wasi:sockets/udp",
        family: Family::Wasi,
        add: |l| bindings::sync::sockets::udp::add_to_linker::<_, WasiSockets>(l, JobState::sockets),
    },
    Provided {
        name: "wasi:sockets/udp-create-socket",
        family: Family::Wasi,
        add: |l| bindings::sync::sockets::udp_create_socket::add_to_linker::<_, WasiSockets>(l, JobState::sockets),
    },
];

/// The names (without versions) of every interface husk provides, sorted.
pub fn provided() -> impl ExactSizeIterator<Item = &'static str> {
    PROVIDED.iter().map(|p| p.name)
}

/// A component linked to exactly the interfaces it imports.
pub(crate) struct Linked {
    /// The linker holding those interfaces and nothing else (shared with
    /// other components importing the same ones).
    pub(crate) linker: Arc<Linker<JobState>>,
    /// The component's imports, as it names them (with versions), in its
    /// order.
    pub(crate) imports: Vec<String>,
}

/// Why a component cannot be linked: one of its imports, named as the
/// component wrote it, and why husk cannot provide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The import, e.g. `wasi:http/types@0.2.0`.
    pub(crate) import: String,
    /// Why, phrased to follow "imports `<import>`, ".
    pub(crate) reason: String,
}

/// A set of [`PROVIDED`] interfaces, one bit per index.
type Set = u32;

const _: () = assert!(PROVIDED.len() <= Set::BITS as usize, "one bit per provided interface");

/// Linkers already built, by the set of interfaces they hold. Building one
/// costs about a tenth of loading a plugin from the compile cache, and the
/// components of one toolchain import the same interfaces: a sandbox builds
/// each set's linker once.
#[derive(Default)]
pub(crate) struct Linkers {
    by_set: Mutex<HashMap<Set, Arc<Linker<JobState>>>>,
}

impl Linkers {
    /// How many distinct linkers were built.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_set.lock().len()
    }

    /// The linker of exactly the interfaces `component` imports, built on
    /// first use of that set.
    ///
    /// # Errors
    ///
    /// [`Refused`] naming the first import that husk does not provide,
    /// provides at another version, that names no version, or that
    /// `grants` do not grant.
    pub(crate) fn link(
        &self,
        engine: &wasmtime::Engine,
        component: &Component,
        grants: &Grants,
    ) -> Result<Linked, Refused> {
        let mut set: Set = 0;
        let mut imports = Vec::new();
        for (import, _) in component.component_type().imports(engine) {
            // Two versions of one interface (`@0.2.0` and `@0.2.3`) share one
            // definition: the linker matches both to it.
            let index = resolve(import)?;
            if let Some(reason) = PROVIDED[index].family.denied(grants) {
                return Err(Refused { import: import.to_owned(), reason: reason.to_owned() });
            }
            set |= 1 << index;
            imports.push(import.to_owned());
        }
        let mut by_set = self.by_set.lock();
        let linker = match by_set.get(&set) {
            Some(linker) => linker.clone(),
            None => {
                let mut linker = Linker::new(engine);
                for provided in PROVIDED.iter().enumerate().filter_map(|(i, p)| (set & (1 << i) != 0).then_some(p)) {
                    (provided.add)(&mut linker).map_err(|e| Refused {
                        import: provided.name.to_owned(),
                        reason: format!("which husk failed to link (a bug in husk): {e:#}"),
                    })?;
                }
                by_set.entry(set).or_insert(Arc::new(linker)).clone()
            }
        };
        Ok(Linked { linker, imports })
    }
}

/// Links every interface husk provides into one linker: a check that the
/// table is consistent, run when a sandbox is made.
///
/// # Errors
///
/// When an interface cannot be linked (a bug, not an input error).
pub(crate) fn link_all(engine: &wasmtime::Engine) -> wasmtime::Result<()> {
    let mut linker = Linker::new(engine);
    for provided in PROVIDED {
        (provided.add)(&mut linker)?;
    }
    Ok(())
}

/// Which of [`PROVIDED`] `import` (a name as a component writes it) is.
fn resolve(import: &str) -> Result<usize, Refused> {
    let refused = |reason: String| Refused { import: import.to_owned(), reason };
    let (name, version) = match import.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (import, None),
    };
    let Some(index) = PROVIDED.iter().position(|p| p.name == name) else {
        return Err(refused(format!("which husk does not provide; husk provides {}", provided_list())));
    };
    let family = PROVIDED[index].family;
    let wanted = format!("husk provides {name} at {}", family.versions());
    match version {
        None => Err(refused(format!("without a version, which husk does not link; {wanted}"))),
        Some(version) if !family.accepts(version) => Err(refused(format!("a version husk does not provide; {wanted}"))),
        Some(_) => Ok(index),
    }
}

/// The `major.minor` of a semantic version with no pre-release (build
/// metadata is allowed); `None` for anything else.
fn major_minor(version: &str) -> Option<(u64, u64)> {
    let release = version.split_once('+').map_or(version, |(release, _build)| release);
    let mut parts = release.split('.');
    let mut number = || -> Option<u64> {
        let part = parts.next()?;
        let canonical =
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && (part == "0" || !part.starts_with('0'));
        canonical.then(|| part.parse().ok()).flatten()
    };
    let (major, minor, _patch) = (number()?, number()?, number()?);
    parts.next().is_none().then_some((major, minor))
}

/// Every interface husk provides, for error messages.
fn provided_list() -> String {
    let names: Vec<&str> = provided().collect();
    format!(
        "{} (husk:worker at 0.1.x, WASI at 0.2.x but wasi:config at {CONFIG_VERSION}; wasi:http and wasi:config only as a topic grants them)",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wasmtime::component::Component;

    use super::{Family, Linkers, PROVIDED, major_minor, resolve};
    use crate::capability::Grants;

    /// A component importing `imports` (instances with one function each).
    fn importing(engine: &wasmtime::Engine, imports: &[&str]) -> Component {
        let imports: String = imports
            .iter()
            .map(|name| format!("(import \"{name}\" (instance (export \"f\" (func (result u64)))))"))
            .collect();
        Component::new(engine, format!("(component {imports})")).unwrap()
    }

    #[test]
    fn components_importing_the_same_interfaces_share_one_linker() {
        let engine = wasmtime::Engine::default();
        let linkers = Linkers::default();
        let random = ["wasi:random/random@0.2.0", "wasi:clocks/wall-clock@0.2.0"];
        let first = linkers.link(&engine, &importing(&engine, &random), &Grants::default()).unwrap();
        // The same interfaces at another patch version and in another order.
        let again = linkers
            .link(
                &engine,
                &importing(&engine, &["wasi:clocks/wall-clock@0.2.3", "wasi:random/random@0.2.3"]),
                &Grants::default(),
            )
            .unwrap();
        let other = linkers.link(&engine, &importing(&engine, &random[..1]), &Grants::default()).unwrap();
        assert!(Arc::ptr_eq(&first.linker, &again.linker));
        assert!(!Arc::ptr_eq(&first.linker, &other.linker));
        assert_eq!(linkers.len(), 2);
        assert_eq!(again.imports, ["wasi:clocks/wall-clock@0.2.3", "wasi:random/random@0.2.3"]);
        let refused = linkers
            .link(&engine, &importing(&engine, &["wasi:http/types@0.2.0"]), &Grants::default())
            .map(|_| ())
            .unwrap_err();
        assert_eq!((refused.import.as_str(), linkers.len()), ("wasi:http/types@0.2.0", 2));
    }

    #[test]
    fn the_table_is_sorted_and_has_no_duplicates() {
        assert!(PROVIDED.windows(2).all(|w| w[0].name < w[1].name));
    }

    #[test]
    fn versions_must_be_compatible() {
        assert_eq!(major_minor("0.2.0"), Some((0, 2)));
        assert_eq!(major_minor("0.2.13+build.1"), Some((0, 2)));
        assert_eq!(major_minor("0.2.0-rc-2023-12-05"), None);
        assert_eq!(major_minor("0.2"), None);
        assert_eq!(major_minor("0.02.0"), None);
        assert_eq!(major_minor("0.2.0.1"), None);
        let streams = PROVIDED.iter().position(|p| p.name == "wasi:io/streams").unwrap();
        assert_eq!(PROVIDED[streams].family, Family::Wasi);
        assert_eq!(resolve("wasi:io/streams@0.2.3"), Ok(streams));
        for refused in ["wasi:io/streams", "wasi:io/streams@0.3.0", "wasi:io/streams@1.2.0", "wasi:io/stream@0.2.0"] {
            assert_eq!(resolve(refused).unwrap_err().import, refused);
        }
        assert!(resolve("husk:worker/log@0.1.0").is_ok());
        assert!(resolve("husk:worker/log@0.2.0").is_err());
        assert!(resolve("wasi:cli/environment@0.3.0").unwrap_err().reason.contains("at 0.2.x"));
    }
}
