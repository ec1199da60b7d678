# gitguard: git folder discovery and the rule table (owner: gitguard/).
