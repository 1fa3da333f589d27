//! The dashboard under `/ui` through a real `husk serve` process, over
//! plain HTTP (a browser's view comes in the browser tests): sign-in and
//! its cookie, tenant isolation, read-only and operator roles, CSRF on
//! every change, and job data rendered as text.

use husk_cli::client::ClientError;
use husk_server::tokens::token_hash;
use serde_json::{Value, json};

use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue};

const TOKEN_B: &str = "ui-token-of-tenant-b";
const READ_A: &str = "ui-read-only-token-of-a";
const OPERATOR: &str = "ui-operator-token";

fn config() -> String {
    format!(
        r#"store = "husk.db"
epoch_tick = "10ms"
operator_tokens = ["sha256:{operator}"]

[tenants.a]
tokens = ["sha256:{a}"]
read_tokens = ["sha256:{read_a}"]
max_concurrent = 4

[tenants.b]
tokens = ["sha256:{b}"]

[topics.a-flaky]
tenant = "a"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "none" }}
fuel = 100_000_000

[topics.a-later]
tenant = "a"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "fixed", max_attempts = 3, delay = "1h" }}

[topics.b-flaky]
tenant = "b"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "none" }}
"#,
        operator = token_hash(OPERATOR),
        a = token_hash(TOKEN_A),
        read_a = token_hash(READ_A),
        b = token_hash(TOKEN_B),
        flaky = guest("flaky").display(),
    )
}

/// An HTTP answer: status, headers, body.
pub struct Answer {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A browser-less client: no redirects followed, the session cookie kept.
pub struct Browser {
    agent: ureq::Agent,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    pub fn new(server: &Server) -> Self {
        let agent = ureq::Agent::config_builder().max_redirects(0).http_status_as_error(false).build().new_agent();
        Self { agent, base: server.url.clone(), cookie: None }
    }

    fn answer(response: ureq::http::Response<ureq::Body>) -> Answer {
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let body = response.into_body().read_to_string().unwrap_or_default();
        Answer { status, headers, body }
    }

    pub fn get(&self, path: &str) -> Answer {
        Self::answer(self.open(path))
    }

    /// The answer to a GET of `path` once its headers arrived, its body
    /// still to read (an event stream).
    fn open(&self, path: &str) -> ureq::http::Response<ureq::Body> {
        let mut request = self.agent.get(&format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("Cookie", cookie);
        }
        request.call().unwrap()
    }

    fn post(&self, path: &str, form: &[(&str, &str)]) -> Answer {
        let mut request = self.agent.post(&format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("Cookie", cookie);
        }
        Self::answer(request.send_form(form.iter().copied()).unwrap())
    }

    /// Posts a component as the upload form does (multipart).
    fn upload(&self, path: &str, csrf: &str, component: &[u8]) -> Answer {
        let boundary = "husk-test-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n--{boundary}\r\n\
             Content-Disposition: form-data; name=\"component\"; filename=\"c.wasm\"\r\n\
             Content-Type: application/wasm\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(component);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut request = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("Content-Type", &format!("multipart/form-data; boundary={boundary}"));
        if let Some(cookie) = &self.cookie {
            request = request.header("Cookie", cookie);
        }
        Self::answer(request.send(&body[..]).unwrap())
    }

    /// Signs in with `token`; returns the sign-in's answer.
    pub fn sign_in(&mut self, token: &str) -> Answer {
        let answer = self.post("/ui/login", &[("token", token)]);
        if let Some(set) = answer.header("set-cookie") {
            self.cookie = Some(set.split(';').next().unwrap().to_owned());
        }
        answer
    }

    /// The CSRF token in a page's forms.
    fn csrf(page: &str) -> String {
        let (_, rest) = page.split_once(r#"name="csrf" value=""#).expect("a form with a CSRF token");
        rest.split('"').next().unwrap().to_owned()
    }
}

/// Enqueues `input` on `topic` as tenant a and waits for it to end.
fn ended_job(server: &Server, topic: &str, input: &Value) -> u64 {
    let client = server.client(Some(TOKEN_A));
    let id = enqueue(&client, topic, input).unwrap()["id"].as_u64().unwrap();
    server.wait_until("the job ends", |s| ended(&s.client(Some(TOKEN_A)).get(&format!("/v1/jobs/{id}")).unwrap()));
    id
}

#[test]
fn sign_in_sets_a_strict_http_only_cookie_and_a_tenant_sees_only_its_own() {
    let server = Server::start(&config());
    let mut browser = Browser::new(&server);
    let first = browser.get("/ui");
    assert_eq!((first.status, first.header("location")), (303, Some("/ui/login")), "signed out: to the form");
    // A sign-in posted from another site's page is refused.
    let forged = browser
        .agent
        .post(&format!("{}/ui/login", browser.base))
        .header("Origin", "http://evil.example")
        .send_form([("token", TOKEN_A)])
        .unwrap();
    let forged = Browser::answer(forged);
    assert_eq!(forged.status, 403);
    assert!(forged.header("set-cookie").is_none(), "no session from a forged sign-in");
    let css = browser.get("/ui/assets/husk.css");
    assert_eq!(css.header("cache-control"), Some("public, max-age=3600"), "assets are kept a while");
    let wrong = browser.sign_in("not-a-token");
    assert_eq!(wrong.status, 401);
    assert!(wrong.header("set-cookie").is_none() && wrong.body.contains("Unknown token"));

    let signed = browser.sign_in(TOKEN_A);
    assert_eq!((signed.status, signed.header("location")), (303, Some("/ui")));
    let cookie = signed.header("set-cookie").unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(cookie.contains(part), "{part} in {cookie}");
    }
    assert!(!cookie.contains(TOKEN_A), "the cookie is a session id, not the token");

    let overview = browser.get("/ui");
    assert_eq!(overview.status, 200);
    assert_eq!(overview.header("cache-control"), Some("no-store"), "pages are never stored");
    assert!(overview.header("content-security-policy").unwrap().contains("script-src 'self'"));
    assert!(overview.body.contains("a-flaky") && overview.body.contains("a-later"));
    assert!(!overview.body.contains("b-flaky"), "another tenant's topic is not shown");
    let fragment = browser.get("/ui/overview");
    assert!(fragment.status == 200 && fragment.body.contains("a-flaky") && !fragment.body.contains("<html"));

    // Tenant b's job is "not found" for a, as through the API.
    let b_job = enqueue(&server.client(Some(TOKEN_B)), "b-flaky", &json!({"succeed_on_attempt": 1})).unwrap();
    let b_id = b_job["id"].as_u64().unwrap();
    assert_eq!(browser.get(&format!("/ui/jobs/{b_id}")).status, 404);
    assert_eq!(browser.get("/ui/jobs?topic=b-flaky").status, 404);
    let listed = browser.get("/ui/jobs");
    assert!(listed.status == 200 && !listed.body.contains("b-flaky"));

    // Signing out ends the session: the old cookie no longer opens a page,
    // and htmx's refresh is sent to the sign-in form as a whole page.
    let csrf = Browser::csrf(&overview.body);
    assert_eq!(browser.post("/ui/logout", &[("csrf", &csrf)]).status, 303);
    assert_eq!(browser.get("/ui").status, 303);
    let mut refresh = browser.agent.get(&format!("{}/ui/overview", browser.base)).header("HX-Request", "true");
    if let Some(cookie) = &browser.cookie {
        refresh = refresh.header("Cookie", cookie);
    }
    let refresh = Browser::answer(refresh.call().unwrap());
    assert_eq!((refresh.status, refresh.header("hx-redirect")), (200, Some("/ui/login")));
    assert!(!refresh.body.contains("a-flaky"));
}

#[test]
fn changes_need_the_sessions_csrf_token_and_a_read_only_session_has_no_buttons() {
    let server = Server::start(&config());
    // An incident: a bad input fails at once (no retries on a-flaky).
    let failed = ended_job(&server, "a-flaky", &json!({"succeed_on_attempt": "never"}));
    let mut reader = Browser::new(&server);
    reader.sign_in(READ_A);
    let page = reader.get(&format!("/ui/jobs/{failed}"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("failed") && page.body.contains("read-only"));
    assert!(!page.body.contains("/retry") && !page.body.contains("/discard"), "no buttons for a reader");
    let csrf = Browser::csrf(&page.body); // the sign-out form's
    let refused = reader.post(&format!("/ui/jobs/{failed}/discard"), &[("csrf", &csrf)]);
    assert_eq!(refused.status, 403, "a reader's change is refused even with its CSRF token");
    let upload = reader.upload("/ui/topics/a-flaky/deploy", &csrf, b"\0asm");
    assert_eq!(upload.status, 403, "a reader cannot upload");
    let topic = reader.get("/ui/topics/a-flaky");
    assert_eq!(topic.status, 200);
    assert!(!topic.body.contains("/pause") && !topic.body.contains("/deploy"), "no buttons for a reader");
    for change in ["pause", "resume"] {
        assert_eq!(reader.post(&format!("/ui/topics/a-flaky/{change}"), &[("csrf", &csrf)]).status, 403);
    }
    let version = server.client(Some(TOKEN_A)).get("/v1/topics/a-flaky/plugins").unwrap()["versions"][0]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    let rollback = reader.post("/ui/topics/a-flaky/rollback", &[("csrf", &csrf), ("version", &version)]);
    assert_eq!(rollback.status, 403);
    assert_eq!(reader.get("/ui/topics/b-flaky").status, 404, "another tenant's topic");

    let mut writer = Browser::new(&server);
    writer.sign_in(TOKEN_A);
    let page = writer.get(&format!("/ui/jobs/{failed}"));
    assert!(page.body.contains("/retry") && page.body.contains("/discard"));
    let csrf = Browser::csrf(&page.body);
    let forged = writer.post(&format!("/ui/jobs/{failed}/discard"), &[("csrf", "0000")]);
    assert_eq!(forged.status, 403, "a wrong CSRF token changes nothing");
    let missing = writer.post(&format!("/ui/jobs/{failed}/discard"), &[]);
    assert!(missing.status >= 400, "no CSRF token: refused ({})", missing.status);
    let incidents = server.client(Some(TOKEN_A)).get("/v1/incidents").unwrap();
    assert_eq!(incidents["incidents"].as_array().unwrap().len(), 1, "still an incident");

    let done = writer.post(&format!("/ui/jobs/{failed}/discard"), &[("csrf", &csrf)]);
    assert_eq!((done.status, done.header("location")), (303, Some(format!("/ui/jobs/{failed}").as_str())));
    let incidents = server.client(Some(TOKEN_A)).get("/v1/incidents").unwrap();
    assert!(incidents["incidents"].as_array().unwrap().is_empty(), "discarded");
    // Its page says so, and offers neither retry nor discard any more.
    let page = writer.get(&format!("/ui/jobs/{failed}"));
    assert!(page.body.contains(r#"<dd id="state" class="state discarded">discarded</dd>"#), "{}", page.body);
    assert!(page.body.contains("its incident discarded"), "{}", page.body);
    assert!(!page.body.contains("/retry") && !page.body.contains("/discard"), "{}", page.body);
    // A retry sent anyway (a page left open elsewhere): refused in the
    // dashboard's frame, with the way back to the job.
    let late = writer.post(&format!("/ui/jobs/{failed}/retry"), &[("csrf", &csrf)]);
    assert_eq!(late.status, 409);
    assert!(late.body.contains("cannot retry it: it is not an open incident"), "{}", late.body);
    assert!(
        late.body.contains("Sign out") && late.body.contains(&format!(r#"href="/ui/jobs/{failed}""#)),
        "{}",
        late.body
    );

    // Cancel a gated job (its retry waits an hour) from its page.
    let client = server.client(Some(TOKEN_A));
    let gated = enqueue(&client, "a-later", &json!({"succeed_on_attempt": 9})).unwrap()["id"].as_u64().unwrap();
    server.wait_until("the job waits for its retry", |s| {
        s.client(Some(TOKEN_A)).get(&format!("/v1/jobs/{gated}")).unwrap()["state"] == "retrying"
    });
    let page = writer.get(&format!("/ui/jobs/{gated}"));
    assert!(page.body.contains("flaky.unavailable"), "the attempt's fault is shown:\n{}", page.body);
    let input = page.body.split(r#"<pre id="input">"#).nth(1).expect("its input is shown");
    assert!(input.starts_with("{\n  &quot;succeed_on_attempt&quot;: 9\n}</pre>"), "pretty JSON: {input}");
    assert_eq!(writer.post(&format!("/ui/jobs/{gated}/cancel"), &[("csrf", &csrf)]).status, 303);
    let record = client.get(&format!("/v1/jobs/{gated}")).unwrap();
    assert_eq!(record["outcome"]["kind"], "cancelled");
}

#[test]
fn job_data_is_rendered_as_text_and_an_operator_sees_every_tenant() {
    let server = Server::start(&config());
    let script = "<script>alert(1)</script>";
    let id = ended_job(&server, "a-flaky", &json!({"succeed_on_attempt": script}));
    let mut operator = Browser::new(&server);
    operator.sign_in(OPERATOR);
    // On the API, the operator's token is told apart from a wrong one.
    match server.client(Some(OPERATOR)).get("/v1/jobs") {
        Err(ClientError::Api { status: 401, message, .. }) => {
            assert!(message.contains("dashboard only") && message.contains("tenant's token"), "{message}")
        }
        other => panic!("an operator token on the API: {other:?}"),
    }
    let page = operator.get(&format!("/ui/jobs/{id}"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "shown as text:\n{}", page.body);
    assert!(!page.body.contains(script), "never as markup");
    // The job's report, then the return of its concurrency permit and the
    // delivery of its outcome to the page's counts: the API shows it ended
    // at the first, the overview counts it after the last.
    let mut overview = operator.get("/ui");
    server.wait_until("the overview counts the ended job", |_| {
        overview = operator.get("/ui");
        overview.body.contains("0 / 4") && overview.body.contains(r#"<td class="n failed-hour">1</td>"#)
    });
    assert!(
        overview.body.contains("a-flaky") && overview.body.contains("b-flaky") && overview.body.contains("operator")
    );
    assert!(overview.body.contains("0 / 4"), "tenant a's concurrency quota:\n{}", overview.body);
    // The last hour: a-flaky's one failure, counted and charted.
    let row = overview.body.split(r#"<tr data-topic="a-flaky"><td rowspan="2">"#).nth(1).expect("a-flaky's last hour");
    let hour = row.split("<td>hour</td>").nth(1).unwrap();
    assert!(
        hour.starts_with(
            r#"<td class="n completed-hour">0</td><td class="n business-hour">0</td><td class="n failed-hour">1</td>"#
        ),
        "{hour}"
    );
    assert!(row.contains(r#"aria-label="0 completed and 1 failed in the last hour""#), "{row}");
    // Its axes (the busiest minute's count, the hour's span) and the
    // minute's counts on hover.
    assert!(row.contains(r##"text-anchor="end" font-size="9" fill="#687084">1</text>"##), "the scale's top: {row}");
    assert!(row.contains("−60 min</text>") && row.contains(">now</text>"), "{row}");
    assert!(row.contains("<title>this minute: 0 completed, 1 failed</title>"), "{row}");
}

#[test]
fn incidents_are_grouped_and_retried_or_discarded_in_bulk_after_a_count() {
    let server = Server::start(&config());
    let bad = json!({"succeed_on_attempt": "never"});
    let ids: Vec<u64> = (0..3).map(|_| ended_job(&server, "a-flaky", &bad)).collect();
    let b_client = server.client(Some(TOKEN_B));
    let b_id = enqueue(&b_client, "b-flaky", &bad).unwrap()["id"].as_u64().unwrap();
    server.wait_until("b's job fails", |s| ended(&s.client(Some(TOKEN_B)).get(&format!("/v1/jobs/{b_id}")).unwrap()));
    let mut browser = Browser::new(&server);
    browser.sign_in(TOKEN_A);
    let page = browser.get("/ui/incidents");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("3 open") && !page.body.contains("b-flaky"), "a's three, not b's:\n{}", page.body);
    let csrf = Browser::csrf(&page.body);
    // Counted in the navigation and by topic on the overview (from the
    // snapshot the host publishes), a's alone; and in the API's topics.
    server.wait_until("the open incidents are counted", |_| {
        browser.get("/ui").body.contains(r#"<span class="badge" id="open-incidents">3</span>"#)
    });
    let overview = browser.get("/ui");
    let link = r#"<td class="n incidents"><a href="/ui/incidents?topic=a-flaky">3</a></td>"#;
    assert!(overview.body.contains(link), "{}", overview.body);
    let topics = server.client(Some(TOKEN_A)).get("/v1/topics").unwrap();
    let counted: Vec<(Value, Value)> = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["topic"].clone(), t["open_incidents"].clone()))
        .collect();
    assert!(counted.contains(&(json!("a-flaky"), json!(3))), "{counted:?}");

    // One ticked, then asked: the count is one.
    let one = ids[0].to_string();
    let form = [("csrf", csrf.as_str()), ("scope", "selected"), ("id", &one), ("action", "retry")];
    let asked = browser.post("/ui/incidents/bulk", &form);
    assert!(asked.body.contains("Retry 1 incident(s)?"), "{}", asked.body);
    let open =
        |s: &Server| s.client(Some(TOKEN_A)).get("/v1/incidents").unwrap()["incidents"].as_array().unwrap().len();
    assert_eq!(open(&server), 3, "asking changes nothing");
    // b's incident ticked by a forged form is not a's to touch.
    let b = b_id.to_string();
    let forged =
        [("csrf", csrf.as_str()), ("scope", "selected"), ("id", &b), ("action", "discard"), ("confirm", "yes")];
    assert!(browser.post("/ui/incidents/bulk", &forged).body.contains("Discard: 0 done"));
    assert_eq!(b_client.get("/v1/incidents").unwrap()["incidents"].as_array().unwrap().len(), 1);

    // All matching a code filter: counted, then discarded.
    let form = [("csrf", csrf.as_str()), ("scope", "all"), ("topic", "a-flaky"), ("code", ""), ("action", "discard")];
    let asked = browser.post("/ui/incidents/bulk", &form);
    assert!(asked.body.contains("Discard 3 incident(s)?"), "{}", asked.body);
    let mut confirmed = form.to_vec();
    confirmed.push(("confirm", "yes"));
    let done = browser.post("/ui/incidents/bulk", &confirmed);
    assert!(done.body.contains("Discard: 3 done"), "{}", done.body);
    assert_eq!(open(&server), 0);
    let mut reader = Browser::new(&server);
    reader.sign_in(READ_A);
    let page = reader.get("/ui/incidents");
    assert!(!page.body.contains("type=\"checkbox\""), "a reader gets no boxes");
    let csrf = Browser::csrf(&page.body);
    let form = [("csrf", csrf.as_str()), ("scope", "all"), ("action", "retry"), ("confirm", "yes")];
    assert_eq!(reader.post("/ui/incidents/bulk", &form).status, 403);
}

#[test]
fn the_job_list_pages_back_through_older_jobs() {
    let server = Server::start(&config());
    let client = server.client(Some(TOKEN_A));
    client.post("/v1/topics/a-later/pause", None, &[]).unwrap();
    let items: Vec<String> = (0..150).map(|i| format!(r#"{{"input":{{"succeed_on_attempt":{i}}}}}"#)).collect();
    let body = format!("[{}]", items.join(","));
    client.post("/v1/topics/a-later/jobs/batch", Some((body.as_bytes(), "application/json")), &[]).unwrap();
    let mut browser = Browser::new(&server);
    browser.sign_in(TOKEN_A);
    let ids_on = |page: &str| -> Vec<u64> {
        page.split(r#"<td class="n"><a href="/ui/jobs/"#)
            .skip(1)
            .map(|r| r.split('"').next().unwrap().parse().unwrap())
            .collect()
    };
    let first = browser.get("/ui/jobs?topic=a-later");
    let newest = ids_on(&first.body);
    assert_eq!(newest.len(), 100, "a page");
    assert!(newest.windows(2).all(|w| w[0] > w[1]), "newest first");
    let older = first.body.split(r#"<a id="older" href=""#).nth(1).expect("a link to older jobs");
    let older = older.split('"').next().unwrap().replace("&amp;", "&");
    assert!(older.ends_with(&format!("before={}", newest[99])), "{older}");
    let second = browser.get(&older);
    let rest = ids_on(&second.body);
    assert_eq!(rest.len(), 50, "the other 50");
    assert!(rest.iter().all(|id| *id < newest[99]), "older ones only");
    assert!(!second.body.contains(r#"id="older""#), "nothing older left");
    assert!(second.body.contains("Newest"));
}

#[test]
fn the_job_list_filters_by_outcome_time_and_fault_code_and_a_jobs_page_shows_each_runs_timing() {
    let server = Server::start(&config());
    let done = ended_job(&server, "a-flaky", &json!({"succeed_on_attempt": 1}));
    let failed = ended_job(&server, "a-flaky", &json!({"succeed_on_attempt": "never"}));
    let client = server.client(Some(TOKEN_A));
    let gated = enqueue(&client, "a-later", &json!({"succeed_on_attempt": 9})).unwrap()["id"].as_u64().unwrap();
    server.wait_until("the job waits for its retry", |s| {
        s.client(Some(TOKEN_A)).get(&format!("/v1/jobs/{gated}")).unwrap()["state"] == "retrying"
    });
    let mut browser = Browser::new(&server);
    browser.sign_in(TOKEN_A);
    let ids_on = |path: &str| -> Vec<u64> {
        let page = browser.get(path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        page.body
            .split(r#"<td class="n"><a href="/ui/jobs/"#)
            .skip(1)
            .map(|r| r.split('"').next().unwrap().parse().unwrap())
            .collect()
    };
    assert_eq!(ids_on("/ui/jobs"), vec![gated, failed, done]);
    assert_eq!(ids_on("/ui/jobs?outcome=failed"), vec![failed]);
    assert_eq!(ids_on("/ui/jobs?outcome=completed"), vec![done]);
    assert_eq!(ids_on("/ui/jobs?fault=unavailable"), vec![gated], "the gated job's last fault");
    assert_eq!(ids_on("/ui/jobs?fault=unavailable&outcome=failed"), Vec::<u64>::new());
    assert_eq!(ids_on("/ui/jobs?topic=a-flaky&state=failed"), vec![failed]);
    assert_eq!(ids_on("/ui/jobs?topic=a-flaky&state=completed"), vec![done]);
    assert_eq!(ids_on("/ui/jobs?state=retrying"), vec![gated], "waiting for its retry");
    assert_eq!(ids_on("/ui/jobs?state=running&outcome=failed"), Vec::<u64>::new(), "no running job has an outcome");
    assert_eq!(ids_on("/ui/jobs?from=2000-01-01T00%3A00&to=2999-01-01T00%3A00"), vec![gated, failed, done]);
    assert_eq!(ids_on("/ui/jobs?to=2000-01-01T00%3A00"), Vec::<u64>::new(), "nothing enqueued before 2000");
    assert_eq!(ids_on("/ui/jobs?from=2999-01-01T00%3A00%3A00Z"), Vec::<u64>::new());
    // The refresh keeps the filter.
    let page = browser.get("/ui/jobs?outcome=failed&fault=x");
    assert!(page.body.contains(r#"hx-get="/ui/jobs/rows?outcome=failed&amp;fault=x""#), "{}", page.body);
    assert!(page.body.contains(r#"<option value="failed" selected>"#), "the form shows the filter");
    for bad in ["/ui/jobs?outcome=exploded", "/ui/jobs?from=yesterday", "/ui/jobs?state=asleep"] {
        let refused = browser.get(bad);
        assert_eq!(refused.status, 400, "{bad}");
    }
    // The API takes the same filters.
    let listed = client.get("/v1/jobs?outcome=failed").unwrap();
    let ids: Vec<u64> = listed["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![failed]);
    let listed = client.get("/v1/jobs?fault_code=unavailable&enqueued_after=2000-01-01T00:00:00Z").unwrap();
    let ids: Vec<u64> = listed["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![gated]);
    let (status, _) = crate::support_server::refusal(client.get("/v1/jobs?enqueued_before=soon"));
    assert_eq!(status, 400);

    // A job's page: each attempt's start, how long it ran and its fuel.
    let page = browser.get(&format!("/ui/jobs/{done}"));
    for part in [r#"<span class="started">"#, r#"<span class="duration">"#, r#"<span class="fuel">"#] {
        assert!(page.body.contains(part), "{part} on the page:\n{}", page.body);
    }
    let record = client.get(&format!("/v1/jobs/{done}")).unwrap();
    let attempt = &record["attempts"][0];
    assert!(attempt["fuel"].as_u64().unwrap() > 0, "fuel was burnt: {attempt}");
    // RFC 3339 in UTC to the millisecond: in order as text.
    assert!(attempt["started_at"].as_str().unwrap() <= attempt["finished_at"].as_str().unwrap(), "{attempt}");
    assert!(attempt["duration_us"].as_u64().is_some(), "{attempt}");
}

#[test]
fn a_pages_event_stream_tells_of_its_own_topics_outcomes_only() {
    use std::io::BufRead;
    let server = Server::start(&config());
    let mut browser = Browser::new(&server);
    assert_eq!(browser.get("/ui/events").status, 303, "signed out: no stream");
    browser.sign_in(TOKEN_A);
    let page = browser.get("/ui/jobs");
    assert!(page.body.contains(r#"sse-connect="/ui/events""#) && page.body.contains(r#"hx-trigger="sse:outcomes"#));
    // A stream that must hear within the timeout, or the test fails.
    let agent =
        ureq::Agent::config_builder().timeout_global(Some(std::time::Duration::from_secs(60))).build().new_agent();
    let stream = agent
        .get(&format!("{}/ui/events", server.url))
        .header("Cookie", browser.cookie.as_deref().unwrap())
        .call()
        .unwrap();
    assert_eq!(stream.headers().get("content-type").unwrap(), "text/event-stream");
    let mut lines = std::io::BufReader::new(stream.into_body().into_reader()).lines();
    // Tenant b's outcome first: a's stream must not count it.
    let b_client = server.client(Some(TOKEN_B));
    let b_id = enqueue(&b_client, "b-flaky", &json!({"succeed_on_attempt": 1})).unwrap()["id"].as_u64().unwrap();
    server.wait_until("b's job ends", |s| ended(&s.client(Some(TOKEN_B)).get(&format!("/v1/jobs/{b_id}")).unwrap()));
    let items =
        r#"[{"input":{"succeed_on_attempt":1}},{"input":{"succeed_on_attempt":1}},{"input":{"succeed_on_attempt":1}}]"#;
    let client = server.client(Some(TOKEN_A));
    client.post("/v1/topics/a-flaky/jobs/batch", Some((items.as_bytes(), "application/json")), &[]).unwrap();
    let (mut heard, mut events) = (0, 0);
    while heard < 3 {
        let line = lines.next().expect("the stream goes on").expect("an event before the timeout");
        if line == "event: outcomes" {
            events += 1;
        } else if let Some(count) = line.strip_prefix("data: ") {
            heard += count.parse::<u64>().unwrap();
        }
    }
    assert_eq!(heard, 3, "a's three outcomes, none of b's ({events} event(s))");
    assert!(events <= 3);
}

/// SIGTERM stops `husk serve` with a page's event stream open: the stream
/// ends at the signal, cleanly (a dashboard left open in a browser used to
/// hold the graceful shutdown forever).
#[test]
fn sigterm_ends_an_open_event_stream_and_the_server_stops() {
    let server = Server::process(&config());
    let mut browser = Browser::new(&server);
    assert_eq!(browser.sign_in(TOKEN_A).status, 303);
    let events = browser.open("/ui/events");
    assert_eq!(events.status(), 200);
    let (status, _) = server.terminate();
    assert!(status.success(), "{status}");
    // Ended by the server (the chunked body's end), not cut off.
    let body = events.into_body().read_to_string();
    assert!(body.is_ok(), "{body:?}");
}

#[test]
fn a_topics_page_shows_its_configuration_and_its_last_hour() {
    let server = Server::start(&config());
    ended_job(&server, "a-flaky", &json!({"succeed_on_attempt": 1}));
    let mut browser = Browser::new(&server);
    browser.sign_in(TOKEN_A);
    let page = browser.get("/ui/topics/a-flaky");
    assert_eq!(page.status, 200);
    for shown in [
        r#"<dd class="workers">1</dd>"#,
        r#"<dd class="retry">none: one attempt</dd>"#,
        "<dd>100000000</dd>",
        r#"<dd class="hosts">none</dd>"#,
        "none: every fault is technical",
        r#"<dd class="permanent">http.http-request-denied, invalid-input</dd>"#,
        r#"<dd class="schedule">none</dd>"#,
        "kept with the outcome",
    ] {
        assert!(page.body.contains(shown), "{shown} in:\n{}", page.body);
    }
    // The job that just completed is in the topic's last hour.
    let hour = page.body.split(r#"<td class="n completed-hour">"#).nth(1).and_then(|s| s.split('<').next());
    assert_eq!(hour, Some("1"), "{}", page.body);
    let later = browser.get("/ui/topics/a-later");
    assert!(later.body.contains(r#"<dd class="retry">3 attempts, 1h apart</dd>"#), "{}", later.body);
}
