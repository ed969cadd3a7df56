"""Customer care: a customer with a duplicated bill. Ask for the line, read the BSS, notice the
double-fired invoice, check the caller's identity, open a dispute, answer with the exact amount,
read the verdict."""

import json
import re

import telcoenv
from telcoenv.agents.care_investigator import read_identity

env = telcoenv.make("duplicate_charge", lang="en", embedder=None)  # None: no IRA (fastest)
opening, info = env.reset(seed=3)
print("CUSTOMER:", opening)
period = re.search(r"\d{4}-\d{2}", opening).group()

# No line number in the opening: a tool call without it is an error that names it.
print("ERROR:", json.loads(env.step({"name": "get_customer", "arguments": {}})[0])["error"])
reply = env.step("Could you give me your mobile number?")[0]
print("CUSTOMER:", reply)
msisdn = re.search(r"\d{9,15}", reply).group()

customer = json.loads(env.step({"name": "get_customer", "arguments": {"msisdn": msisdn}})[0])
customer_id = customer["customer"]["customer_id"]
account_id = customer["accounts"][0]["account_id"]
bill = json.loads(
    env.step({"name": "get_bill", "arguments": {"account_id": account_id, "period": period}})[0]
)
invoices = bill["invoices"]
print("INVOICES:", [(i["invoice_id"], i["issued_at"], i["amount"]) for i in invoices])
assert len(invoices) == 2 and invoices[0]["amount"] == invoices[1]["amount"]  # fired twice

# A dispute changes the account: the caller proves who they are first (a line number is no
# proof; personal data stays masked until then).
reply = env.step("Before I open a dispute, please confirm your full name and date of birth.")[0]
print("CUSTOMER:", reply)
name, birth_date = read_identity(reply)  # the honest baseline's reader of what was said
check = {"customer_id": customer_id, "full_name": name, "birth_date": birth_date}
print("IDENTITY:", env.step({"name": "verify_identity", "arguments": check})[0])

env.step(
    {
        "name": "open_care_ticket",
        "arguments": {
            "customer_id": customer_id,
            "category": "billing_dispute",
            "summary": f"{invoices[1]['invoice_id']} duplicates {invoices[0]['invoice_id']}.",
        },
    }
)
_, reward, terminated, _, info = env.step(
    {
        "name": "submit_resolution",
        "arguments": {
            "intent": "Billing dispute: duplicate charge",
            "summary": "The billing run fired twice; a dispute ticket is open.",
            "answer": f"{invoices[0]['amount']:.2f} SAR",
        },
    }
)
metrics = info["metrics"]
print("RESOLVED:", info["resolved"], "ANSWER:", metrics["answer"], "ARGS:", metrics["args"])
print("SAS:", metrics["sas"], "CHAIN:", " > ".join(info["predicted_chain"]))
