//! Outbound HTTP and config granted per topic: the `fetch` and `config`
//! example guests against a real HTTP server on 127.0.0.1 (see
//! `support_http`). Kills are driven by bumped epochs.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use husk::capability::{AllowedHost, ConfigGrant, Grants, HttpGrant, Resolver};
use husk::fault::codes;
use husk::outcome::Outcome;
use husk::plugin::{Plugin, PluginError, World};
use husk::retry::RetryPolicySpec;
use husk::sandbox::{Ending, Execution, Kill, Limits, Sandbox};
use husk::{Host, PluginSource, Topic};
use serde_json::{Value, json};

use crate::support::{fault, guest, job, manual_sandbox, output, sandbox, test_config};
use crate::support_http::{Seen, TestServer};
use crate::support_sink::WaitingSink;

const PATIENCE: Duration = Duration::from_secs(30);

fn allow(entries: &[&str]) -> HttpGrant {
    HttpGrant::default().with_allowed(entries.iter().map(|e| AllowedHost::parse(e).unwrap()).collect())
}

fn granted(http: HttpGrant) -> Grants {
    Grants::default().with_http(http)
}

fn load(sandbox: &Sandbox, name: &str, grants: &Grants) -> Plugin {
    let bytes = std::fs::read(guest(name)).unwrap();
    sandbox.load_granted(&bytes, World::Operation, name, grants).unwrap()
}

/// Runs `fetch` with `input` under `grants` and a 30 s deadline.
fn fetch(sandbox: &Sandbox, grants: &Grants, input: Value) -> Execution {
    let plugin = load(sandbox, "fetch", grants);
    let limits = Limits::default().with_deadline(PATIENCE);
    sandbox.execute_granted(&plugin, &job(1, input), &limits, grants, None).unwrap()
}

fn fault_code(execution: &Execution) -> String {
    fault(execution).0.code
}

/// A resolver answering `address` for every name.
fn resolving_to(address: &str) -> Resolver {
    let address: std::net::IpAddr = address.parse().unwrap();
    Resolver(Arc::new(move |_, port| vec![SocketAddr::new(address, port)]))
}

#[test]
fn a_component_importing_wasi_http_or_config_loads_only_where_its_topic_grants_it() {
    let sandbox = sandbox();
    for (name, import) in [("fetch", "wasi:http/"), ("config", "wasi:config/store")] {
        let bytes = std::fs::read(guest(name)).unwrap();
        match sandbox.load_bytes(&bytes, World::Operation, name) {
            Err(PluginError::Imports { import: refused, reason, .. }) => {
                assert!(refused.starts_with(import), "{refused}");
                assert!(reason.contains("does not grant"), "{reason}");
            }
            other => panic!("{name} loaded without a grant: {:?}", other.map(|p| p.digest().to_owned())),
        }
    }
    // A topic that grants one capability does not grant the other.
    let config_only = Grants::default().with_config(ConfigGrant::new(BTreeMap::new(), BTreeMap::new()).unwrap());
    let bytes = std::fs::read(guest("fetch")).unwrap();
    assert!(sandbox.load_granted(&bytes, World::Operation, "fetch", &config_only).is_err());
    // An empty allowlist grants nothing.
    assert!(granted(HttpGrant::default()).http.is_none());
}

#[test]
fn requests_go_only_to_the_scheme_host_and_port_the_allowlist_names() {
    let server = TestServer::start();
    let sandbox = sandbox();
    let url = server.url("/ok");
    let allowed = fetch(&sandbox, &granted(allow(&[&server.origin()])), json!({ "url": url }));
    assert_eq!(output(&allowed)["body"], "ok");
    assert_eq!(server.seen().len(), 1);

    let other_port = format!("http://127.0.0.1:{}", server.port().wrapping_add(1).max(1));
    for grant in [
        allow(&[&other_port]),
        allow(&[&format!("https://127.0.0.1:{}", server.port())]),
        allow(&["http://127.0.0.2"]),
        allow(&[&format!("http://*.127.0.0.1:{}", server.port())]),
    ] {
        let denied = fetch(&sandbox, &granted(grant.clone()), json!({ "url": url }));
        assert_eq!(fault_code(&denied), "http.http-request-denied", "{:?}", grant.allowed);
    }
    assert_eq!(server.seen().len(), 1, "no denied request reached the server");
}

#[test]
fn a_name_resolving_to_an_internal_address_is_refused_unless_the_allowlist_names_it() {
    let server = TestServer::start();
    let sandbox = sandbox();
    let port = server.port();
    let url = format!("http://api.example.test:{port}/ok");
    // A wildcard entry does not let DNS point a name at loopback or at the
    // metadata service.
    for address in ["127.0.0.1", "169.254.169.254", "10.1.2.3", "::1", "::ffff:127.0.0.1"] {
        let grant = allow(&[&format!("http://*.example.test:{port}")]).with_resolver(resolving_to(address));
        let refused = fetch(&sandbox, &granted(grant), json!({ "url": url }));
        assert_eq!(fault_code(&refused), "http.destination-ip-prohibited", "{address}");
    }
    assert!(server.seen().is_empty());
    // Naming the host itself is the operator's choice.
    let named = allow(&[&format!("http://api.example.test:{port}")]).with_resolver(resolving_to("127.0.0.1"));
    let called = fetch(&sandbox, &granted(named), json!({ "url": url }));
    assert_eq!(output(&called)["body"], "ok");
    assert_eq!(server.seen().len(), 1);
}

/// Set in the child process `..._before_any_connection` starts inside a
/// network namespace of its own; the parent's non-loopback addresses, comma
/// separated, in [`HOST_ADDRESSES`].
const IN_NAMESPACE: &str = "HUSK_TEST_IN_NETWORK_NAMESPACE";
const HOST_ADDRESSES: &str = "HUSK_TEST_HOST_ADDRESSES";

/// The name of the test below, as libtest filters it.
const REFUSED_TEST: &str =
    "outbound::a_name_resolving_to_a_special_purpose_or_own_address_is_refused_before_any_connection";

/// A wildcard entry does not let DNS point a name at an address that is
/// not globally reachable, nor at one of the host's own interfaces (this
/// machine's `eth0` is 192.0.2.2: a name resolving there reached husk's own
/// API): the request fails with `destination-IP-prohibited`, an error only
/// the check before the connect gives (a connect would fail otherwise).
///
/// A test sends no traffic but to loopback: here, only the loopback cases
/// run in the machine's network; every other address is tried in a network
/// namespace this test makes (`unshare -rn`, the test binary run again in
/// it), which has nothing but its own `lo` — the host's non-loopback
/// addresses and two globally reachable ones put on it — so even a broken
/// check that let a request through would reach nothing outside it. Where
/// no namespace can be made, the host's own addresses are checked against
/// the address rule only, and the test says so.
#[test]
fn a_name_resolving_to_a_special_purpose_or_own_address_is_refused_before_any_connection() {
    if std::env::var_os(IN_NAMESPACE).is_some() {
        return refused_inside_a_network_namespace();
    }
    let own = husk::capability::own_addresses().unwrap();
    eprintln!("the host's own addresses: {own:?}");
    let (loopback, others): (Vec<IpAddr>, Vec<IpAddr>) = own.iter().copied().partition(IpAddr::is_loopback);
    // The loopback ones end to end: a broken check would reach loopback.
    let server = TestServer::start();
    let port = server.port();
    let sandbox = sandbox();
    let cases: Vec<IpAddr> = loopback.iter().copied().chain(["127.0.0.2".parse().unwrap()]).collect();
    for (address, code) in refused_end_to_end(&sandbox, port, &cases) {
        assert_eq!(code, "http.destination-ip-prohibited", "{address}");
    }
    assert!(server.seen().is_empty(), "no refused request reached the server");
    // The others against the rule the request is held to.
    for address in &others {
        assert!(husk::capability::is_prohibited(*address, &own), "the host's own {address}");
    }
    let probe = std::process::Command::new("unshare").args(["-rn", "true"]).output();
    if !probe.as_ref().is_ok_and(|p| p.status.success()) {
        eprintln!(
            "no network namespace could be made ({probe:?}): the host's non-loopback addresses {others:?} and \
             the special-purpose ranges were checked against the address rule only, not end to end"
        );
        return;
    }
    let host_addresses = others.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(",");
    let child = std::process::Command::new("unshare")
        .arg("-rn")
        .arg(std::env::current_exe().unwrap())
        .args([REFUSED_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(IN_NAMESPACE, "1")
        .env(HOST_ADDRESSES, host_addresses)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
    assert!(child.status.success(), "in the network namespace: {}\n{stdout}\n{stderr}", child.status);
    // libtest's own `test … ` may begin the line.
    let ran = stdout.find("refused in the network namespace:").map(|at| stdout[at..].lines().next().unwrap_or(""));
    assert!(ran.is_some(), "the cases ran: {stdout}\n{stderr}");
    eprintln!("{stderr}{}", ran.unwrap_or_default());
}

/// Runs `fetch` for `http://<n>.example.test:<port>/ok` under a wildcard
/// entry, the name `<n>` resolving to `addresses[n]`: each address with
/// the fault code its request ended with.
fn refused_end_to_end(sandbox: &Sandbox, port: u16, addresses: &[IpAddr]) -> Vec<(IpAddr, String)> {
    let table: Vec<IpAddr> = addresses.to_vec();
    let resolver = Resolver(Arc::new(move |host: &str, port| {
        let n: usize = host.split('.').next().unwrap().parse().unwrap();
        vec![SocketAddr::new(table[n], port)]
    }));
    let grants = granted(allow(&[&format!("http://*.example.test:{port}")]).with_resolver(resolver));
    let plugin = load(sandbox, "fetch", &grants);
    let limits = Limits::default().with_deadline(PATIENCE);
    (0..addresses.len())
        .map(|n| {
            let input = json!({ "url": format!("http://{n}.example.test:{port}/ok") });
            let execution = sandbox.execute_granted(&plugin, &job(1, input), &limits, &grants, None).unwrap();
            (addresses[n], fault_code(&execution))
        })
        .collect()
}

/// The child's half: in a fresh network namespace, puts the parent's
/// addresses and two globally reachable ones on `lo`, then checks that a
/// name resolving to any of them, or into any refused range, is refused.
fn refused_inside_a_network_namespace() {
    use husk::capability::own_addresses;
    let before = own_addresses().unwrap();
    assert!(
        before.iter().all(IpAddr::is_loopback),
        "not in a fresh network namespace (addresses {before:?}): not configuring it"
    );
    // Globally reachable addresses, the host's own only by being on an
    // interface: what the interface rule alone refuses.
    let global = ["100.128.0.1", "2001:200::1"];
    let host = std::env::var(HOST_ADDRESSES).unwrap();
    let mirrored: Vec<&str> = host.split(',').filter(|a| !a.is_empty()).collect();
    let ip = |args: &[&str]| {
        let done = std::process::Command::new("ip").args(args).output();
        match done {
            Ok(done) if done.status.success() => true,
            other => {
                eprintln!("ip {}: {other:?}", args.join(" "));
                false
            }
        }
    };
    ip(&["link", "set", "lo", "up"]);
    for address in global.iter().chain(&mirrored) {
        let parsed: IpAddr = address.parse().unwrap();
        // Link-local ones need a scope of their own; they are refused as
        // link-local anyway (below).
        if matches!(parsed, IpAddr::V6(v6) if v6.is_unicast_link_local()) {
            continue;
        }
        let prefix = if parsed.is_ipv4() { "32" } else { "128" };
        ip(&["addr", "add", &format!("{address}/{prefix}"), "dev", "lo"]);
    }
    let own = own_addresses().unwrap();
    let own_cases: Vec<IpAddr> = own.iter().copied().filter(|a| !a.is_loopback()).collect();
    eprintln!("this namespace's own addresses: {own:?}");
    let global_own: Vec<IpAddr> = own_cases.iter().copied().filter(|a| !husk::capability::is_not_global(*a)).collect();
    if global_own.is_empty() {
        eprintln!(
            "no globally reachable address could be put on lo: the interface rule alone is checked by the unit test only"
        );
    } else {
        assert!(global_own.contains(&"100.128.0.1".parse().unwrap()), "{global_own:?}");
    }
    // One address inside each refused range, and the ones that embed one.
    let ranges = [
        "0.1.2.3",
        "100.64.0.1",
        "192.0.0.170",
        "192.0.2.2",
        "192.88.99.1",
        "198.18.0.1",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::127.0.0.1",
        "::192.0.2.2",
        "::ffff:192.0.2.2",
        "::ffff:0:192.0.2.2",
        "64:ff9b::7f00:1",
        "64:ff9b::192.0.2.2",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::1",
        "100::1",
        "2001::1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001:db8::1",
        "2002:7f00:1::1",
        "2002:c000:202::1",
        "3fff::1",
        "fec0::1",
        "ff0e::1",
    ];
    let mut cases: Vec<IpAddr> = ranges.iter().map(|a| a.parse().unwrap()).collect();
    cases.extend(&own_cases);
    // The NAT64 and IPv4-mapped forms of the host's own IPv4 addresses.
    for address in &own_cases {
        if let IpAddr::V4(v4) = address {
            let [a, b, c, d] = v4.octets();
            cases.push(IpAddr::V6(v4.to_ipv6_mapped()));
            cases.push(IpAddr::V6(std::net::Ipv6Addr::new(
                0x64,
                0xff9b,
                0,
                0,
                0,
                0,
                u16::from_be_bytes([a, b]),
                u16::from_be_bytes([c, d]),
            )));
        }
    }
    let sandbox = sandbox();
    let results = refused_end_to_end(&sandbox, 8089, &cases);
    let wrong: Vec<_> = results.iter().filter(|(_, code)| code != "http.destination-ip-prohibited").collect();
    assert!(wrong.is_empty(), "not refused before connecting: {wrong:?}");
    println!(
        "refused in the network namespace: {} addresses, {} of them this namespace's own",
        cases.len(),
        own_cases.len()
    );
}

#[test]
fn a_request_to_a_server_that_never_answers_is_dropped_with_the_job_at_its_deadline_tick() {
    let server = TestServer::start();
    let (seen_tx, seen) = mpsc::channel();
    server.notify(seen_tx);
    let sandbox = manual_sandbox();
    let grants = granted(allow(&[&server.origin()]));
    let plugin = load(&sandbox, "fetch", &grants);
    let next = load(&sandbox, "fetch", &grants);
    let limits = Limits::default().with_deadline(Duration::from_millis(50));
    let (done_tx, done) = mpsc::channel();
    let worker = {
        let (sandbox, limits, grants, url, ok) =
            (sandbox.clone(), limits.clone(), grants.clone(), server.url("/hang"), server.url("/ok"));
        std::thread::spawn(move || {
            let hung =
                sandbox.execute_granted(&plugin, &job(1, json!({ "url": url })), &limits, &grants, None).unwrap();
            done_tx.send(hung).unwrap();
            let long = Limits::default().with_deadline(PATIENCE);
            let again = sandbox.execute_granted(&next, &job(1, json!({ "url": ok })), &long, &grants, None).unwrap();
            done_tx.send(again).unwrap();
        })
    };
    assert_eq!(seen.recv_timeout(PATIENCE).unwrap(), "/hang", "the request reached the server");
    for _ in 0..sandbox.engine().ticks_for(limits.deadline) {
        sandbox.engine().increment_epoch();
    }
    let hung = done.recv_timeout(PATIENCE).expect("killed at the deadline tick");
    assert!(matches!(hung.ending, Ending::Killed(Kill::Timeout { .. })), "{:?}", hung.ending);
    assert_eq!(fault_code(&hung), codes::TIMEOUT);
    let again = done.recv_timeout(PATIENCE).expect("the worker thread takes the next job");
    assert_eq!(output(&again)["body"], "ok");
    worker.join().unwrap();
}

#[test]
fn response_bodies_are_capped_per_job() {
    let server = TestServer::start();
    let sandbox = sandbox();
    let grants = granted(allow(&[&server.origin()]));
    let capped = fetch(&sandbox, &grants, json!({ "url": server.url("/big/102400") }));
    let code = fault_code(&capped);
    assert!(code.starts_with("http."), "the read fails inside the guest, not the job: {code}");
    assert!(capped.peak_memory < 64 << 20, "{}", capped.peak_memory);
    // The default cap is 16 MiB: the server wrote little more (socket
    // buffers) before the stream was cut.
    assert!(server.body_bytes() < 40 << 20, "{} bytes written", server.body_bytes());
    // Under the cap, a body reads whole.
    let small = granted(allow(&[&server.origin()]).with_max_response(1 << 20));
    let read = fetch(&sandbox, &small, json!({ "url": server.url("/big/512") }));
    assert_eq!(output(&read)["body"].as_str().unwrap().len(), 512 << 10);
    // The cap is per job: two bodies of 512 KiB do not fit in 768 KiB.
    let tight = granted(allow(&[&server.origin()]).with_max_response(768 << 10));
    let twice = fetch(&sandbox, &tight, json!({ "url": server.url("/big/512"), "repeat": 2 }));
    assert!(fault_code(&twice).starts_with("http."), "{:?}", twice.ending);
}

#[test]
fn requests_per_job_are_capped() {
    let server = TestServer::start();
    let sandbox = sandbox();
    let grants = granted(allow(&[&server.origin()]));
    let flood = fetch(&sandbox, &grants, json!({ "url": server.url("/ok"), "repeat": 1000 }));
    assert_eq!(fault_code(&flood), "http.http-request-denied");
    assert_eq!(server.seen().len(), 64, "the default max_http_requests");
}

#[test]
fn every_attempt_of_a_job_sends_the_same_idempotency_keys() {
    let server = TestServer::start();
    let sink = Arc::new(WaitingSink::default());
    let grants = granted(allow(&[&server.origin()]));
    let host = Host::builder()
        .engine(test_config())
        .sink(sink.clone())
        .default_retry(RetryPolicySpec::Fixed { max_attempts: 5, delay: Duration::from_millis(5) })
        .topic(Topic::wasm("calls", PluginSource::Path(guest("fetch"))).with_workers(1).with_grants(grants))
        .build()
        .unwrap();
    // 503 twice, then 200: three attempts of one job.
    let flaky = host.enqueue("calls", json!({ "url": server.url("/fail-until/3") }).to_string()).unwrap();
    let outcomes = sink.wait_for(1, PATIENCE);
    assert_eq!(outcomes[0].attempts, 3, "{:?}", outcomes[0]);
    let key = format!("husk-{flaky}-1");
    let Outcome::Completed { output } = &outcomes[0].outcome else { panic!("{:?}", outcomes[0]) };
    assert_eq!(serde_json::from_slice::<Value>(output).unwrap()["body"], key.as_str());
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|s| s.key.as_deref() == Some(key.as_str())), "{seen:?}");
    // Two calls per attempt: keys 1 and 2, the same on the retry.
    let twice = host.enqueue("calls", json!({ "url": server.url("/fail-until/2"), "repeat": 2 }).to_string()).unwrap();
    sink.wait_for(2, PATIENCE);
    let keys: Vec<_> = server.seen()[3..].iter().map(|s| s.key.clone().unwrap()).collect();
    // Attempt 1: call 1 fails; attempt 2: call 1 passes, call 2 fails;
    // attempt 3: both pass.
    let (one, two) = (format!("husk-{twice}-1"), format!("husk-{twice}-2"));
    assert_eq!(keys, [&one, &one, &two, &one, &two].map(String::clone));
    // A key the guest sets itself is kept.
    let own = json!({ "url": server.url("/ok"), "headers": { "idempotency-key": "mine" } });
    host.enqueue("calls", own.to_string()).unwrap();
    sink.wait_for(3, PATIENCE);
    assert_eq!(server.seen().last(), Some(&Seen { path: "/ok".into(), key: Some("mine".into()) }));
    host.shutdown();
}

#[test]
fn config_values_are_the_topics_own() {
    let sink = Arc::new(WaitingSink::default());
    let config = |values: &[(&str, &str)]| {
        let values = values.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Grants::default().with_config(ConfigGrant::new(values, BTreeMap::new()).unwrap())
    };
    let topic = |name: &str, tenant: &str, grants: Grants| {
        Topic::wasm(name, PluginSource::Path(guest("config"))).with_tenant(tenant).with_workers(1).with_grants(grants)
    };
    let host = Host::builder()
        .engine(test_config())
        .sink(sink.clone())
        .topic(topic("a", "tenant-a", config(&[("endpoint", "https://a.example"), ("only-a", "1")])))
        .topic(topic("b", "tenant-b", config(&[("endpoint", "https://b.example")])))
        .build()
        .unwrap();
    let mut expected = std::collections::HashMap::new();
    for (topic, key, value) in [
        ("a", "endpoint", json!("https://a.example")),
        ("b", "endpoint", json!("https://b.example")),
        ("a", "only-a", json!("1")),
        ("b", "only-a", Value::Null),
    ] {
        expected.insert(host.enqueue(topic, json!({ "key": key }).to_string()).unwrap(), value);
    }
    for outcome in sink.wait_for(expected.len(), PATIENCE) {
        let Outcome::Completed { output } = &outcome.outcome else { panic!("{outcome:?}") };
        assert_eq!(serde_json::from_slice::<Value>(output).unwrap()["value"], expected[&outcome.job_id]);
    }
    host.shutdown();
}

/// A secret of the topic's config: the guest reads it, logs it, returns it
/// in a fault and as its output; it appears nowhere husk writes — its log,
/// the API's job view, the SQLite files.
#[test]
fn a_secret_never_leaves_the_guest_through_husk() {
    use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state};
    const SECRET: &str = "sk_live_husk_test_5f3a9c71";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-key");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let config = format!(
        r#"store = "husk.db"
epoch_tick = "10ms"

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.s]
tenant = "a"
plugin = "{plugin}"
workers = 1
retry = {{ kind = "none" }}

[topics.s.config]
region = "eu-west-1"

[topics.s.secrets]
api_key = "file:api-key"
"#,
        hash = husk_server::tokens::token_hash(TOKEN_A),
        plugin = guest("config").display(),
    );
    let server = Server::start_logging(dir, &config, &[], "info");
    let client = server.client(Some(TOKEN_A));
    let ids: Vec<Value> = [
        json!({ "key": "api_key", "log": true, "fault": true }),
        json!({ "key": "api_key", "log": true }),
        json!({ "key": "region", "log": true }),
    ]
    .iter()
    .map(|input| enqueue(&client, "s", input).unwrap()["id"].clone())
    .collect();
    server.wait_until("the jobs end", |_| ids.iter().all(|id| ended(&job_state(&client, id))));
    let views: Vec<String> = ids.iter().map(|id| job_state(&client, id).to_string()).collect();
    assert!(views[0].contains("config.shown") && views[0].contains("***"), "{}", views[0]);
    assert!(views[1].contains("***"), "{}", views[1]);
    assert!(views[2].contains("eu-west-1"), "the plain value is not hidden: {}", views[2]);
    let log = server.log();
    assert!(log.contains("config api_key = ***") && log.contains("config region = eu-west-1"), "{log}");
    let (_, dir) = server.terminate();
    for view in &views {
        assert!(!view.contains(SECRET), "{view}");
    }
    assert!(!log.contains(SECRET), "{log}");
    let mut files = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("husk.db") {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
                "{} holds the secret",
                path.display()
            );
            files += 1;
        }
    }
    assert!(files >= 1, "the SQLite store was read");
}

/// An `https` entry makes the request speak TLS (rustls, the webpki
/// roots): a server answering in plain HTTP is a TLS protocol error, where
/// an `http` request to the same port is answered.
#[test]
fn https_requests_speak_tls() {
    let server = TestServer::start();
    let sandbox = sandbox();
    let port = server.port();
    let grant = allow(&[&format!("https://127.0.0.1:{port}")]).with_timeout(Duration::from_secs(5));
    let tls = fetch(&sandbox, &granted(grant), json!({ "url": format!("https://127.0.0.1:{port}/ok") }));
    assert_eq!(fault_code(&tls), "http.tls-protocol-error", "{:?}", tls.ending);
    let plain = fetch(&sandbox, &granted(allow(&[&server.origin()])), json!({ "url": server.url("/ok") }));
    assert_eq!(output(&plain)["body"], "ok");
}
