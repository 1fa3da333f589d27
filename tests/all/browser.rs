//! The dashboard in a real browser: Debian's headless Chromium driven over
//! WebDriver (`chromedriver`, through fantoccini) against a real `husk
//! serve`. Sign in through the form; watch a topic's depth change without
//! a reload; open a failed job and read its attempts; retry the incident
//! and watch it complete; a read-only session has no button; a second
//! tenant sees none of the first's jobs; an injected `<script>` does not
//! run. Screenshots of each page go to `target/ui-screens/`.
//!
//! Each test polls the page (every 50 ms, up to 30 s) for what it waits for.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use husk_server::tokens::token_hash;
use serde_json::{Value, json};

use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue};

const TOKEN_B: &str = "browser-token-of-tenant-b";
const READ_A: &str = "browser-read-only-token-of-a";

fn config() -> String {
    format!(
        r#"store = "husk.db"
epoch_tick = "10ms"

[tenants.a]
tokens = ["sha256:{a}"]
read_tokens = ["sha256:{read_a}"]

[tenants.b]
tokens = ["sha256:{b}"]

[topics.a-flaky]
tenant = "a"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "none" }}

[topics.a-held]
tenant = "a"
plugin = "{flaky}"
workers = 1

[topics.a-quote]
tenant = "a"
plugin = "{quote_v1}"
workers = 1
retry = {{ kind = "none" }}

[topics.b-flaky]
tenant = "b"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "none" }}
"#,
        a = token_hash(TOKEN_A),
        read_a = token_hash(READ_A),
        b = token_hash(TOKEN_B),
        flaky = guest("flaky").display(),
        quote_v1 = guest("quote-v1").display(),
    )
}

/// A `chromedriver` process on a free port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
    profile: tempfile::TempDir,
}

impl Driver {
    fn start() -> Self {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            // A process group of its own: dropped, the driver and every
            // Chromium process it started are killed together.
            let mut child = Command::new("/usr/bin/chromedriver")
                .process_group(0)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("chromedriver (Debian's chromium-driver) runs");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(20) {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    let profile = tempfile::tempdir().unwrap();
                    return Driver { child, url: format!("http://127.0.0.1:{port}"), profile };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: another one
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("chromedriver did not start");
    }

    /// A new headless Chromium session (its own profile directory).
    async fn browser(&self, name: &str) -> Client {
        let profile = self.profile.path().join(name);
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                // As this machine needs them: no sandbox as root, and no
                // background connections to a network that is closed.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--window-size=1280,900", format!("--user-data-dir={}", profile.display())],
            },
        });
        let Value::Object(capabilities) = capabilities else { unreachable!() };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector).capabilities(capabilities).connect(&self.url).await.expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(group) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `test` on a runtime of its own.
fn run(test: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(test);
}

/// Polls `check` every 50 ms for up to 30 s.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < Duration::from_secs(30), "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The text of the first element matching `css`, or "" when there is none.
/// An element replaced while it is read (htmx swapped it in the meantime)
/// is looked up again; any other error fails the test.
async fn text(browser: &Client, css: &str) -> String {
    for _ in 0..20 {
        let element = match browser.find(Locator::Css(css)).await {
            Ok(element) => element,
            Err(e) if e.is_no_such_element() => return String::new(),
            Err(e) if e.is_stale_element_reference() => continue,
            Err(e) => panic!("reading {css}: {e}"),
        };
        match element.text().await {
            Ok(text) => return text,
            Err(e) if e.is_stale_element_reference() || e.is_no_such_element() => continue,
            Err(e) => panic!("reading {css}: {e}"),
        }
    }
    panic!("{css} kept being replaced while read");
}

/// Saves a screenshot of the page as `target/ui-screens/NAME.png`.
async fn screenshot(browser: &Client, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screens");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), browser.screenshot().await.unwrap()).unwrap();
}

/// Signs in through the form with `token`.
async fn sign_in(browser: &Client, server: &Server, token: &str) {
    browser.goto(&format!("{}/ui", server.url)).await.unwrap();
    assert!(browser.current_url().await.unwrap().path().ends_with("/ui/login"), "signed out: the form");
    browser.find(Locator::Css("#token")).await.unwrap().send_keys(token).await.unwrap();
    browser.find(Locator::Css("form[action='/ui/login'] button")).await.unwrap().click().await.unwrap();
    eventually("the overview after sign-in", || async { text(browser, "h1").await == "Overview" }).await;
}

#[test]
#[cfg_attr(not(husk_browser), ignore = "no Chromium: apt-get install chromium chromium-driver")]
fn an_operator_watches_depth_fixes_an_incident_and_tenants_stay_apart() {
    let server = Server::start(&config());
    let driver = Driver::start();
    run(async {
        let browser = driver.browser("a").await;
        sign_in(&browser, &server, TOKEN_A).await;
        screenshot(&browser, "overview").await;

        // The depth of a paused topic rises as jobs arrive, without a reload.
        let client = server.client(Some(TOKEN_A));
        client.post("/v1/topics/a-held/pause", None, &[]).unwrap();
        let marker: Value = browser.execute("window.husk_marker = 1; return 1", vec![]).await.unwrap();
        assert_eq!(marker, json!(1));
        for _ in 0..3 {
            enqueue(&client, "a-held", &json!({"succeed_on_attempt": 1})).unwrap();
        }
        eventually("the queued count shows 3", || async {
            text(&browser, "tr[data-topic='a-held'] td.queued").await == "3"
        })
        .await;
        let same_page: Value = browser.execute("return window.husk_marker === 1", vec![]).await.unwrap();
        assert_eq!(same_page, json!(true), "refreshed in place, not reloaded");
        screenshot(&browser, "overview-depth").await;

        // quote-v1 cannot price USD: the job fails (no retries), an incident.
        // The job list, open before the job exists, shows it as it fails,
        // without a reload.
        browser.goto(&format!("{}/ui/jobs?topic=a-quote", server.url)).await.unwrap();
        // Counts the server-sent events htmx hands the list.
        let listen = "window.husk_marker = 2; window.husk_sse = 0; \
                      document.body.addEventListener('htmx:sseMessage', () => { window.husk_sse += 1; });";
        browser.execute(listen, vec![]).await.unwrap();
        assert!(browser.find(Locator::Css("#jobs tbody")).await.is_ok(), "the job list");
        assert!(text(&browser, "#jobs tbody").await.is_empty());
        let input = json!({"amount": 120, "currency": "USD"});
        let id = enqueue(&client, "a-quote", &input).unwrap()["id"].as_u64().unwrap();
        eventually("the job is listed as failed", || async {
            text(&browser, "#jobs tbody tr").await.contains("failed")
        })
        .await;
        let same_page: Value = browser.execute("return window.husk_marker === 2", vec![]).await.unwrap();
        assert_eq!(same_page, json!(true), "the list refreshed in place");
        let heard: Value = browser.execute("return window.husk_sse", vec![]).await.unwrap();
        assert!(heard.as_u64().is_some_and(|n| n >= 1), "the outcome came as a server-sent event: {heard}");
        screenshot(&browser, "jobs").await;
        browser.find(Locator::LinkText(&id.to_string())).await.unwrap().click().await.unwrap();
        eventually("the job's page", || async { text(&browser, "h1").await == format!("Job {id}") }).await;
        let attempts = text(&browser, "ul.attempts").await;
        assert!(attempts.contains("quote.rates-unavailable"), "attempt 1's fault: {attempts}");
        assert!(attempts.contains(" started ") && attempts.contains(", ran "), "its start and length: {attempts}");
        assert_eq!(text(&browser, "#outcome-kind").await.split_whitespace().next(), Some("failed"));
        screenshot(&browser, "job-failed").await;

        // The fixed version deployed, retry the incident from its page.
        let v2 = std::fs::read(guest("quote-v2")).unwrap();
        client.post("/v1/topics/a-quote/plugins", Some((&v2, "application/wasm")), &[]).unwrap();
        browser.find(Locator::Css("button[value='retry']")).await.unwrap().click().await.unwrap();
        let page = format!("{}/ui/jobs/{id}", server.url);
        eventually("the retried job completes", || async {
            browser.goto(&page).await.is_ok() && text(&browser, "#outcome-kind").await.starts_with("completed")
        })
        .await;
        assert!(text(&browser, "pre.output").await.contains("\"version\": \"v2\""), "v2 ran it");
        assert!(text(&browser, "#input").await.contains("\"USD\""), "the input kept with the outcome");
        screenshot(&browser, "job-completed").await;
        browser.goto(&format!("{}/ui", server.url)).await.unwrap();
        eventually("the overview counts the outcomes", || async {
            text(&browser, "#recent tr[data-topic='a-quote'] td.completed-hour").await == "1"
        })
        .await;
        screenshot(&browser, "overview-after").await;

        // Tenant b, in another browser, sees none of it.
        let other = driver.browser("b").await;
        sign_in(&other, &server, TOKEN_B).await;
        assert!(text(&other, "#topics").await.contains("b-flaky"), "b's own topic");
        assert!(!text(&other, "#topics").await.contains("a-flaky"));
        other.goto(&format!("{}/ui/jobs", server.url)).await.unwrap();
        assert!(other.find(Locator::Css("#jobs tbody")).await.is_ok(), "the job list");
        assert!(text(&other, "#jobs tbody").await.is_empty(), "no jobs of another tenant");
        other.goto(&format!("{}/ui/jobs/{id}", server.url)).await.unwrap();
        assert_eq!(text(&other, "h1").await, "Not Found");
        other.close().await.unwrap();
        browser.close().await.unwrap();
    });
}

#[test]
#[cfg_attr(not(husk_browser), ignore = "no Chromium: apt-get install chromium chromium-driver")]
fn a_reader_has_no_buttons_and_an_injected_script_does_not_run() {
    let server = Server::start(&config());
    let driver = Driver::start();
    let client = server.client(Some(TOKEN_A));
    // The guest's fault body quotes the bad input: markup in job data.
    let payload = "<script>window.husk_pwned = 1</script><img src=x onerror=\"window.husk_pwned = 2\">";
    let id = enqueue(&client, "a-flaky", &json!({"succeed_on_attempt": payload})).unwrap()["id"].as_u64().unwrap();
    server.wait_until("the job fails", |s| ended(&s.client(Some(TOKEN_A)).get(&format!("/v1/jobs/{id}")).unwrap()));
    run(async {
        let browser = driver.browser("reader").await;
        sign_in(&browser, &server, READ_A).await;
        browser.goto(&format!("{}/ui/jobs/{id}", server.url)).await.unwrap();
        eventually("the job's page", || async { text(&browser, "h1").await == format!("Job {id}") }).await;
        let shown = text(&browser, "body").await;
        assert!(shown.contains("<script>window.husk_pwned = 1</script>"), "the payload shows as text:\n{shown}");
        let pwned: Value = browser.execute("return typeof window.husk_pwned", vec![]).await.unwrap();
        assert_eq!(pwned, json!("undefined"), "the injected script and handler did not run");
        let buttons = browser.find_all(Locator::Css("form[action*='/jobs/'] button")).await.unwrap();
        assert!(buttons.is_empty(), "a read-only session has no button");
        assert!(text(&browser, "nav").await.contains("read-only"));
        screenshot(&browser, "job-read-only").await;
        browser.close().await.unwrap();
    });
}

#[test]
#[cfg_attr(not(husk_browser), ignore = "no Chromium: apt-get install chromium chromium-driver")]
fn a_version_is_deployed_by_upload_and_rolled_back_and_a_topic_paused() {
    let server = Server::start(&config());
    let driver = Driver::start();
    let junk = server.dir.path().join("not-a-component.wasm");
    std::fs::write(&junk, b"\0asm but not really").unwrap();
    run(async {
        let browser = driver.browser("deployer").await;
        sign_in(&browser, &server, TOKEN_A).await;
        browser.find(Locator::LinkText("a-quote")).await.unwrap().click().await.unwrap();
        eventually("the topic's page", || async { text(&browser, "h1").await == "Topic a-quote" }).await;
        let rows = |b: &Client| {
            let b = b.clone();
            async move { b.find_all(Locator::Css("#versions tbody tr")).await.unwrap().len() }
        };
        assert_eq!(rows(&browser).await, 1, "the config's version");
        let first = browser.find(Locator::Css("#versions tbody tr")).await.unwrap().attr("data-version").await;
        let first = first.unwrap().unwrap();

        // A file that is not a component: refused, wasmtime's reason shown.
        browser.find(Locator::Css("#component")).await.unwrap().send_keys(junk.to_str().unwrap()).await.unwrap();
        browser.find(Locator::Css("button[value='deploy']")).await.unwrap().click().await.unwrap();
        eventually("the refusal", || async { !text(&browser, "#refused").await.is_empty() }).await;
        let refused = text(&browser, "#refused").await;
        assert!(refused.contains("a-quote") && refused.len() > 30, "a reason: {refused}");
        screenshot(&browser, "topic-refused").await;

        // The real v2: deployed and current.
        let v2 = guest("quote-v2");
        browser.find(Locator::Css("#component")).await.unwrap().send_keys(v2.to_str().unwrap()).await.unwrap();
        browser.find(Locator::Css("button[value='deploy']")).await.unwrap().click().await.unwrap();
        eventually("two versions", || async { rows(&browser).await == 2 }).await;
        let current = text(&browser, "#versions tbody tr:first-child td:last-child").await;
        assert_eq!(current, "current", "the upload is current");
        let api = server.client(Some(TOKEN_A)).get("/v1/topics/a-quote/plugins").unwrap();
        assert_eq!(api["versions"][0]["current"], true);
        assert_ne!(api["versions"][0]["version"], first.as_str(), "a new version");
        screenshot(&browser, "topic-deployed").await;

        // Roll back to the first from its row.
        let row = format!("#versions tr[data-version='{first}'] button[value='rollback']");
        browser.find(Locator::Css(&row)).await.unwrap().click().await.unwrap();
        eventually("the first version current again", || async {
            text(&browser, &format!("#versions tr[data-version='{first}'] td:last-child")).await.starts_with("current")
        })
        .await;
        let note = text(&browser, &format!("#versions tr[data-version='{first}'] td:last-child")).await;
        assert!(note.starts_with("current (rolled back ") && note.ends_with(" by a)"), "{note}");
        let newest = text(&browser, "#versions tbody tr:first-child td:last-child").await;
        assert_eq!(newest, "Make current", "the upload stays first: a rollback keeps the deploy order");
        browser.execute("document.getElementById('versions').scrollIntoView()", vec![]).await.unwrap();
        screenshot(&browser, "topic-rolled-back").await;
        let current = server.client(Some(TOKEN_A)).get("/v1/topics").unwrap();
        let quote = current["topics"].as_array().unwrap().iter().find(|t| t["topic"] == "a-quote").unwrap().clone();
        assert_eq!(quote["version"], first.as_str(), "the API agrees");

        // Pause, then resume.
        browser.find(Locator::Css("button[value='pause']")).await.unwrap().click().await.unwrap();
        eventually("paused", || async { text(&browser, "#topic-state").await.ends_with("paused") }).await;
        let topics = server.client(Some(TOKEN_A)).get("/v1/topics").unwrap();
        assert!(topics["topics"].as_array().unwrap().iter().any(|t| t["topic"] == "a-quote" && t["paused"] == true));
        browser.find(Locator::Css("button[value='resume']")).await.unwrap().click().await.unwrap();
        eventually("running", || async { text(&browser, "#topic-state").await.ends_with("running") }).await;
        browser.close().await.unwrap();
    });
}

#[test]
#[cfg_attr(not(husk_browser), ignore = "no Chromium: apt-get install chromium chromium-driver")]
fn walking_twenty_pages_in_one_tab_never_runs_out_of_connections() {
    let server = Server::start(&config());
    let driver = Driver::start();
    run(async {
        let browser = driver.browser("walk").await;
        // A page that cannot load fails here, not after the default minute.
        let timeouts = fantoccini::wd::TimeoutConfiguration::new(None, Some(Duration::from_secs(15)), None);
        browser.update_timeouts(timeouts).await.unwrap();
        sign_in(&browser, &server, TOKEN_A).await;
        let client = server.client(Some(TOKEN_A));
        let done = enqueue(&client, "a-quote", &json!({"amount": 1, "currency": "EUR"})).unwrap()["id"].clone();
        server.wait_until("the job ends", |_| ended(&crate::support_server::job_state(&client, &done)));
        // Twenty pages, each with its event stream, then back and forth
        // through the history: the pages the back/forward cache keeps must
        // not keep their streams (six per host would exhaust the browser's
        // connections).
        let pages = [format!("/ui/jobs/{done}"), "/ui/jobs".to_owned(), "/ui".to_owned(), "/ui/incidents".to_owned()];
        for n in 0..20 {
            let page = &pages[n % pages.len()];
            browser.goto(&format!("{}{page}", server.url)).await.unwrap_or_else(|e| panic!("page {n}, {page}: {e}"));
        }
        for _ in 0..6 {
            browser.back().await.unwrap();
        }
        for _ in 0..6 {
            browser.forward().await.unwrap();
        }
        // The next page loads, and its own stream delivers.
        browser.goto(&format!("{}/ui/jobs?topic=a-quote", server.url)).await.unwrap();
        let listen = "window.husk_sse = 0; \
                      document.body.addEventListener('htmx:sseMessage', () => { window.husk_sse += 1; });";
        browser.execute(listen, vec![]).await.unwrap();
        enqueue(&client, "a-quote", &json!({"amount": 2, "currency": "EUR"})).unwrap();
        eventually("an outcome arrives on the last page's stream", || async {
            let heard: Value = browser.execute("return window.husk_sse", vec![]).await.unwrap();
            heard.as_u64().is_some_and(|n| n >= 1)
        })
        .await;
        browser.close().await.unwrap();
    });
}

#[test]
#[cfg_attr(not(husk_browser), ignore = "no Chromium: apt-get install chromium chromium-driver")]
fn a_job_is_found_by_its_id_and_a_cancel_asks_first() {
    let server = Server::start(&config());
    let driver = Driver::start();
    run(async {
        let browser = driver.browser("find").await;
        sign_in(&browser, &server, TOKEN_A).await;
        let client = server.client(Some(TOKEN_A));
        client.post("/v1/topics/a-held/pause", None, &[]).unwrap();
        let id = enqueue(&client, "a-held", &json!({"succeed_on_attempt": 1})).unwrap()["id"].clone();
        // The navigation's box: an id and Enter.
        let find = browser.find(Locator::Css("nav form.jump input[name='id']")).await.unwrap();
        find.send_keys(&format!("{id}\u{E007}")).await.unwrap();
        eventually("the job's page", || async { text(&browser, "h1").await == format!("Job {id}") }).await;
        let state = browser.find(Locator::Css("#state")).await.unwrap();
        assert_eq!(state.attr("class").await.unwrap().as_deref(), Some("state queued"));
        screenshot(&browser, "job-queued").await;

        // Cancel asks first: dismissed, nothing changes; accepted, cancelled.
        let question = format!("Cancel job {id}?");
        browser.find(Locator::Css("button[value='cancel']")).await.unwrap().click().await.unwrap();
        assert_eq!(browser.get_alert_text().await.unwrap(), question);
        browser.dismiss_alert().await.unwrap();
        assert_eq!(crate::support_server::job_state(&client, &id)["state"], "queued", "a dismissed cancel");
        browser.find(Locator::Css("button[value='cancel']")).await.unwrap().click().await.unwrap();
        assert_eq!(browser.get_alert_text().await.unwrap(), question);
        browser.accept_alert().await.unwrap();
        server.wait_until("the job is cancelled", |_| {
            crate::support_server::job_state(&client, &id)["state"] == "cancelled"
        });
        browser.goto(&format!("{}/ui/jobs/{id}", server.url)).await.unwrap();
        let state = browser.find(Locator::Css("#state")).await.unwrap();
        assert_eq!(state.attr("class").await.unwrap().as_deref(), Some("state cancelled"));
        // An id that is none: refused, not a server error.
        browser.goto(&format!("{}/ui/jobs/find?id=abc", server.url)).await.unwrap();
        assert_eq!(text(&browser, "h1").await, "Not Found");
        browser.close().await.unwrap();
    });
}
